// The run description the broker hands a worker: typed, length-capped, checked.
// Anything unexpected ends the worker (setup step kReadSpec).
//
// Descriptor layout when the worker starts. The broker places 0..7 with dup2 (so none
// of them is close-on-exec across the exec of the worker: they must reach it) and
// closes everything else; the worker closes anything above 7 again, marks 4 and 5
// close-on-exec itself, and closes 3 and 7 before exec'ing node.
//   0 stdin  /dev/null            1 stdout pipe (write end)     2 stderr pipe (write end)
//   3 spec   (read end; the encoded RunSpec, then EOF)
//   4 status (write end; close-on-exec once in the worker, so it closes silently on a
//             successful exec of node; on a failed setup step the worker writes one
//             WorkerFailure and exits with the step code)
//   5 node   (O_RDONLY fd of the pinned interpreter, exec'd with execveat(AT_EMPTY_PATH))
//   6 script (O_RDONLY fd of the declared script, opened beneath the skill directory;
//             node's bootstrap reads it from offset 0 whatever its current offset)
//   7 skill  (O_PATH|O_DIRECTORY fd of the skill directory; becomes the cwd via fchdir,
//             or with namespaces via chdir to the bound path checked against it; the
//             run-as uid needs search permission on it, else step kChdir fails)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

inline constexpr int kWorkerSpecFd = 3;
inline constexpr int kWorkerStatusFd = 4;
inline constexpr int kWorkerNodeFd = 5;
inline constexpr int kWorkerScriptFd = 6;
inline constexpr int kWorkerSkillDirFd = 7;

// Why: the worker reads its spec before any limit is applied; a bounded read cannot be
// made to exhaust its memory, whatever arrives on fd 3.
inline constexpr size_t kRunSpecMaxBytes = 1 << 20;  // whole encoded spec
inline constexpr size_t kRunSpecMaxStrings = 256;    // argv + envp entries

// Each limit is applied as soft = hard = value (CPU: hard = value + 1 so SIGXCPU comes
// first), lowered only: a value above the worker's current hard limit is clamped to it.
// 0 leaves that limit as inherited. Defaults: shared/run_limits_default.h.
struct RunLimits {
  uint64_t nproc = 0;          // RLIMIT_NPROC (per real uid: only meaningful with a uid switch)
  uint64_t address_space = 0;  // RLIMIT_AS in bytes
  uint64_t data = 0;           // RLIMIT_DATA in bytes
  uint64_t cpu_seconds = 0;    // RLIMIT_CPU
  uint64_t fsize = 0;          // RLIMIT_FSIZE in bytes
  uint64_t nofile = 0;         // RLIMIT_NOFILE
  // RLIMIT_CORE is always 0.
};

// What the worker execs on fd 5.
enum class RunProgram : uint8_t {
  // node, with the worker's fixed bootstrap (worker/node_bootstrap.h) that runs the
  // open script on fd 6 as the CommonJS main module named script_path.
  kNodeScript = 0,
  // args verbatim as argv (args[0] is argv[0]); no bootstrap. For the probe in tests
  // and for interpreters other than node; script_path is unused (may be empty).
  kDirectArgv = 1,
};

struct RunSpec {
  RunProgram program = RunProgram::kNodeScript;
  std::string script_path;        // real absolute path of the script (for node's
                                  // module identity: __filename, relative require)
  std::vector<std::string> args;  // script arguments, verbatim
  std::vector<std::string> envp;  // "NAME=value", exactly the allowlisted block
  bool switch_ids = false;        // setgroups({}) + setresgid + setresuid
  uint32_t uid = 0;
  uint32_t gid = 0;
  RunLimits limits;
  // The run's own view (worker/namespaces.h): a user and a mount namespace with a
  // private /tmp, every hidden_roots directory covered by an empty tmpfs, and the skill
  // directory bound back at skill_dir_path, which becomes the cwd.
  bool namespaces = false;
  std::string skill_dir_path;             // real absolute path of the skill directory (fd 7)
  std::vector<std::string> hidden_roots;  // absolute, not "/"; shortest first
  bool seccomp = true;       // load seccomp_bpf as the last step before exec
  std::string seccomp_bpf;   // the compiled policy (seccomp/policy.h): struct sock_filter
                             // records; required when seccomp, empty otherwise
};

// A classic BPF program: struct sock_filter records, at most BPF_MAXINSNS (the
// kernel's own ceiling). seccomp/load.cc checks both against <linux/filter.h>.
inline constexpr size_t kBpfInsnBytes = 8;
inline constexpr size_t kBpfMaxInsns = 4096;
inline constexpr size_t kRunSpecMaxBpfBytes = kBpfInsnBytes * kBpfMaxInsns;

// True when `bpf` could be a program: 1..kBpfMaxInsns whole instructions.
inline bool IsPlausibleBpf(std::string_view bpf) {
  return !bpf.empty() && bpf.size() % kBpfInsnBytes == 0 && bpf.size() <= kRunSpecMaxBpfBytes;
}
inline constexpr size_t kRunSpecMaxHiddenRoots = 64;

// The wire format (little-endian, no padding; see shared/run_spec.cc):
//   "SMRS" u32 version=3 | u8 program u8 switch_ids u8 seccomp u8 namespaces | u32 uid
//   u32 gid | u64 nproc,address_space,data,cpu_seconds,fsize,nofile | str script_path |
//   u32 argc, argc x str | u32 envc, envc x str | str seccomp_bpf | str skill_dir_path |
//   u32 rootc, rootc x str
//                                                           (str = u32 length + bytes)
// Encode does not validate; Decode (and the worker) accept only what IsValidRunSpec does.
std::string EncodeRunSpec(const RunSpec& spec);

// The rules Decode enforces on the decoded value: no NUL in any string; argv + envp at
// most kRunSpecMaxStrings entries; every envp entry NAME=value with NAME matching
// [A-Za-z_][A-Za-z0-9_]* and no NAME twice; kNodeScript needs an absolute
// script_path, kDirectArgv a non-empty args; with seccomp, seccomp_bpf is 1 to
// kRunSpecMaxBpfBytes / 8 whole 8-byte instructions, without it empty; with namespaces
// an absolute skill_dir_path and at most kRunSpecMaxHiddenRoots absolute hidden_roots
// other than "/", without them both empty. Brokers can check a spec before forking.
bool IsValidRunSpec(const RunSpec& spec);

// A portable variable name, [A-Za-z_][A-Za-z0-9_]*: the one rule for the run spec,
// declarations and systemd credentials.
bool IsEnvName(std::string_view name);

// nullopt on any malformed, oversized or trailing input.
std::optional<RunSpec> DecodeRunSpec(std::string_view bytes);

// What a worker writes on the status fd when a setup step fails.
struct WorkerFailure {
  int32_t step = 0;  // a WorkerStep value (worker_steps.h); also the exit code
  int32_t err = 0;   // errno of the failing call
};

}  // namespace skillmcp
