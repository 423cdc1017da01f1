// The worker's setup steps, in the order the worker performs them (the two namespace
// steps, numbered last, come right after the identity switch).
//
// Contract between the broker (broker/run) and skill-mcp-worker: when a setup step
// fails, the worker writes one WorkerFailure{step, errno} (shared/run_spec.h) on the
// status fd (4) and exits with the step's value as its exit code. A successful exec
// closes the status fd silently (O_CLOEXEC), so the broker reads EOF there.
//
// The values live in 200..230, a range no ordinary exit uses: signal deaths reported by
// shells are 128+N (at most 192), and the script's own exit is never confused with
// these because the worker has already exec'd by then. The broker should trust the
// status fd first and the exit code second (a script could itself exit 205).
#pragma once

#include <cstdint>
#include <optional>

namespace skillmcp {

enum class WorkerStep : int32_t {
  kReadSpec = 200,       // read fd 3 to EOF (bounded) and DecodeRunSpec
  kCheckFds = 201,       // fds 4..7 present and of the right kinds
  kSetsid = 202,         // setsid() (own session and group); signals back to default
  kCloseFds = 203,       // close everything except 0,1,2 and 4..7
  kSetLimits = 204,      // prlimits from the spec, RLIMIT_CORE = 0
  kSecurebits = 205,     // lock the securebits (only where CAP_SETPCAP allows)
  kDropBounding = 206,   // drop every capability from the bounding set
  kRefuseRootIds = 207,  // target uid/gid 0, or equal to the broker's: refused
  kSetGroups = 208,      // setgroups(0, NULL)
  kSetGid = 209,         // setresgid(gid, gid, gid)
  kSetUid = 210,         // setresuid(uid, uid, uid)
  kDropAmbient = 211,    // clear the ambient capability set
  kDropCaps = 212,       // empty effective, permitted and inheritable
  kVerifyIds = 213,      // getres[ug]id all equal the target; regaining root fails
  kVerifyCaps = 214,     // re-read every set: all empty (bounding where droppable)
  kNoNewPrivs = 215,     // prctl(PR_SET_NO_NEW_PRIVS, 1)
  kChdir = 216,          // fchdir(7) into the skill directory, close 7
  kSeccomp = 217,        // install the seccomp policy (seccomp/)
  kExec = 218,           // execveat(5, "", argv, envp, AT_EMPTY_PATH)
  // With RunSpec::namespaces only, right after kSetUid (worker/main.cc); numbered
  // after kExec so that the codes above stay what they were.
  kUserNamespace = 219,  // unshare(CLONE_NEWUSER|CLONE_NEWNS), own uid/gid maps
  kMountView = 220,      // private /tmp, skills roots covered, the skill dir bound back
};

inline constexpr int32_t kWorkerStepFirst = 200;
inline constexpr int32_t kWorkerStepLast = 230;  // reserved up to here

// A phrase that completes "the worker could not ...".
inline const char* DescribeWorkerStep(WorkerStep step) {
  switch (step) {
    case WorkerStep::kReadSpec:
      return "read a valid run description from the broker";
    case WorkerStep::kCheckFds:
      return "find the expected descriptors (status, node, script, skill dir)";
    case WorkerStep::kSetsid:
      return "start its own session and process group with default signal handling";
    case WorkerStep::kCloseFds:
      return "close the inherited descriptors";
    case WorkerStep::kSetLimits:
      return "apply the resource limits";
    case WorkerStep::kRefuseRootIds:
      return "accept the run-as identity (root, or the broker's own uid or gid, is refused)";
    case WorkerStep::kSetGroups:
      return "drop the supplementary groups";
    case WorkerStep::kSetGid:
      return "switch to the run-as gid";
    case WorkerStep::kSetUid:
      return "switch to the run-as uid";
    case WorkerStep::kVerifyIds:
      return "verify that the uid/gid switch cannot be undone";
    case WorkerStep::kSecurebits:
      return "lock the securebits";
    case WorkerStep::kDropAmbient:
      return "clear the ambient capabilities";
    case WorkerStep::kDropBounding:
      return "drop the capability bounding set";
    case WorkerStep::kDropCaps:
      return "clear the effective, permitted and inheritable capabilities";
    case WorkerStep::kVerifyCaps:
      return "verify that no capability is left";
    case WorkerStep::kNoNewPrivs:
      return "set no_new_privs";
    case WorkerStep::kChdir:
      return "enter the skill directory";
    case WorkerStep::kSeccomp:
      return "install the seccomp filter";
    case WorkerStep::kExec:
      return "execute the interpreter";
    case WorkerStep::kUserNamespace:
      return "create the run's user and mount namespace";
    case WorkerStep::kMountView:
      return "build the run's filesystem view (private /tmp, other skills hidden)";
  }
  return "complete an unknown setup step";
}

// The step named by a worker exit code, if the code is one of ours.
inline std::optional<WorkerStep> WorkerStepFromExitCode(int code) {
  if (code < static_cast<int>(WorkerStep::kReadSpec) ||
      code > static_cast<int>(WorkerStep::kMountView))
    return std::nullopt;
  return static_cast<WorkerStep>(code);
}

}  // namespace skillmcp
