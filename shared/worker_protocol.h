// The worker protocol: everything the broker (broker/run/spawn) and skill-mcp-worker
// agree on, typed both ways. docs/run-description.md describes it in prose. The codecs:
// shared/run_spec_codec.cc, cell_spec_codec.cc and worker_frames_codec.cc, over the wire
// primitives of shared/worker_wire.h; the phrase for each step: worker_step_wording.cc.
//
// Descriptor layout when the worker starts. Spawn places 0..7 with dup2 (so none
// of them is close-on-exec across the exec of the worker: they must reach it) and
// closes everything else; the worker closes anything above 7 again, marks 4 and 5
// close-on-exec itself, and closes 3 and 7 before exec'ing node.
//   0 stdin  /dev/null            1 stdout pipe (write end)     2 stderr pipe (write end)
//   3 spec   (read end; the encoded RunSpec, then EOF; on a socket the CellSpec first)
//   4 report (write end; close-on-exec once in the worker, so node never holds it; a
//             failed setup step writes one framed WorkerReport and exits with the step
//             code; once node has been reaped, the run's end as one WorkerExit)
//   5 node   (O_RDONLY fd of the pinned interpreter, exec'd with execveat(AT_EMPTY_PATH))
//   6 script (a sealed memfd copy of the checked script, broker/run/prepared_run.h;
//             node's bootstrap reads it from offset 0 whatever its current offset)
//   7 skill  (O_PATH|O_DIRECTORY fd of the skill directory; becomes the cwd via fchdir,
//             or with namespaces via chdir to the bound path checked against it; the
//             run-as uid needs search permission on it, else step kChdir fails)
// The probe mode (RunSpec::probe) needs only 0..4.
// A worker started ahead of its run (broker/run/worker_pool.h) gets 0..5 only, and fd 3
// is a unix stream socket: its cell comes first, then the description, whose bytes carry
// 6 and 7 as SCM_RIGHTS; the worker places them while reading and checks them at
// kCheckFds again (worker/spec_input.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/egress_allowlist.h"

namespace skillmcp {

inline constexpr int kWorkerSpecFd = 3;
inline constexpr int kWorkerReportFd = 4;
inline constexpr int kWorkerNodeFd = 5;
inline constexpr int kWorkerScriptFd = 6;
inline constexpr int kWorkerSkillDirFd = 7;
inline constexpr int kWorkerFdCount = 8;  // 0..7

// One version for every message of the protocol (the cell, the run description, the
// report and the run's end): a broker and a worker from different builds refuse each
// other instead of misreading.
inline constexpr uint32_t kWorkerProtocolVersion = 15;

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
  bool operator==(const RunLimits&) const = default;
};

// A node_modules directory a run may read, with the identity (device and inode) of the
// directory the broker checked at that path (broker/run/module_dirs.h): the worker uses
// what it opens there only when it is that same directory (worker/module_dir.h).
struct ModuleDir {
  std::string path;  // absolute real path
  uint64_t dev = 0;  // st_dev of the broker's lstat
  uint64_t ino = 0;  // st_ino of the broker's lstat; never 0 in a valid spec
  bool operator==(const ModuleDir&) const = default;
};

// Which interpreter fd 5 is, so the worker starts it the way it needs (worker/exec.h):
// node through its bootstrap (worker/node_bootstrap.h), python3 through its own
// (worker/python_bootstrap.h). Both run the script's sealed bytes from fd 6.
enum class InterpreterKind : uint8_t { kNode = 0, kPython3 = 1 };

// The interpreter runs the script on fd 6 through the worker's fixed bootstrap for its
// kind, as the main module named script_path.
struct RunSpec {
  // The boot-time namespace probe (broker/run/namespace_probe.h): the worker does the
  // run-independent part of its sequence (identity switch, user namespace, private /tmp)
  // and exits 0 instead of exec'ing anything. Needs fds 0..4 only; script_path, args
  // and envp empty, no seccomp.
  bool probe = false;
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
  // directory bound back read-only at skill_dir_path, which becomes the cwd.
  bool namespaces = false;
  std::string skill_dir_path;             // real absolute path of the skill directory (fd 7)
  std::vector<std::string> hidden_roots;  // absolute, not "/"; shortest first
  // With namespaces the run also gets its own pid and IPC namespace (worker/cell.h);
  // fresh_proc mounts a /proc of that pid namespace (only with namespaces; the boot
  // probe finds out whether the runtime permits it).
  bool fresh_proc = false;
  bool seccomp = true;      // load seccomp_bpf as the last step before exec
  std::string seccomp_bpf;  // the compiled policy (seccomp/policy.h): struct sock_filter
                            // records; required when seccomp, empty otherwise
  // The filesystem allowlist (worker/landlock.h). 0 is off; else the kernel's ABI as the
  // broker probed it, at most landlock::kKnownAbi (shared/landlock_abi.h). The paths
  // are normalised absolute paths (empty: none); without Landlock only scratch_dir_path
  // may be set.
  uint32_t landlock_abi = 0;
  bool network_off = false;          // refuse TCP connect and bind (needs ABI 4+)
  std::string scratch_dir_path;      // the run's TMPDIR (read-write), made by the broker
  std::string data_dir_path;         // MCP_DATA_DIR (read-write), when set
  std::string node_dir_path;         // where the pinned node lives (read and execute)
  std::vector<ModuleDir> read_dirs;  // node_modules beside the skills roots (read; also
                                     // bound into a namespaced run's view)
  InterpreterKind interpreter = InterpreterKind::kNode;
  // python3's real path (its argv[0], from which it finds its prefix and sets
  // sys.executable); empty for node and a probe.
  std::string interpreter_path;
  // The declared network mode (worker/egress_cell.h): a network namespace of the run's
  // own, whose resolver answers only these hosts and whose connections to them the mirror
  // asks the broker for over the egress channel, the third descriptor sent with the
  // description. Only with namespaces; at most kRunSpecMaxEgressRules rules, each host as
  // NormaliseEgressHost writes it, with 1 to kRunSpecMaxEgressPorts sorted distinct ports.
  bool egress_declared = false;
  std::vector<EgressRule> egress_rules;
  // The mirror's own filter (seccomp/policy.h, MirrorPolicyGroups), loaded by the mirror
  // once it has forked the run (step kMirrorSeccomp): required in the declared network
  // mode with seccomp, empty otherwise.
  std::string mirror_bpf;
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
inline constexpr size_t kRunSpecMaxReadDirs = 64;
inline constexpr uint32_t kRunSpecMaxLandlockAbi = 7;  // == landlock::kKnownAbi
inline constexpr size_t kRunSpecMaxEgressRules = 64;
inline constexpr size_t kRunSpecMaxEgressPorts = 16;

// The wire format (little-endian, no padding; shared/run_spec_codec.cc):
//   "SMRS" u32 version | u8 probe u8 switch_ids u8 seccomp u8 namespaces | u32 uid
//   u32 gid | u64 nproc,address_space,data,cpu_seconds,fsize,nofile | str script_path |
//   u32 argc, argc x str | u32 envc, envc x str | str seccomp_bpf | str skill_dir_path |
//   u32 rootc, rootc x str | u32 landlock_abi u8 network_off | str scratch_dir_path |
//   str data_dir_path | str node_dir_path | u32 readc, readc x (str path u64 dev u64 ino) |
//   u8 fresh_proc | u8 interpreter | str interpreter_path | u8 egress_declared |
//   u32 rulec, rulec x (str host u32 portc, portc x u32 port) | str mirror_bpf
//   (str = u32 length + bytes)
// nullopt when the spec is not one DecodeRunSpec would accept (IsValidRunSpec, or
// longer than kRunSpecMaxBytes): the encoder never truncates or sends what is refused.
std::optional<std::string> EncodeRunSpec(const RunSpec& spec);

// The rules Decode enforces on the decoded value: no NUL in any string; argv + envp at
// most kRunSpecMaxStrings entries; every envp entry NAME=value with NAME matching
// [A-Za-z_][A-Za-z0-9_]* and no NAME twice; kNodeScript needs an absolute
// script_path (a probe: no script_path, args or envp, no seccomp); with seccomp,
// seccomp_bpf is 1 to kRunSpecMaxBpfBytes / 8 whole 8-byte instructions, without it
// empty; with namespaces an absolute skill_dir_path and at most kRunSpecMaxHiddenRoots
// absolute hidden_roots other than "/", without them both empty; landlock_abi at most
// kRunSpecMaxLandlockAbi, network_off only with ABI 4+, every Landlock path normalised
// and absolute, or empty, at most kRunSpecMaxReadDirs read_dirs, each absolute with a
// non-zero inode, and without Landlock no data or node dirs and read dirs only with
// namespaces; a probe carries neither Landlock nor a scratch directory; a python3 run
// carries a normalised absolute interpreter_path, node and a probe none; mirror_bpf is a
// program as seccomp_bpf is exactly when egress_declared and seccomp, else empty. Brokers
// can check a spec before forking.
bool IsValidRunSpec(const RunSpec& spec);

// A portable variable name, [A-Za-z_][A-Za-z0-9_]*: the one rule for the run spec,
// declarations and systemd credentials.
bool IsEnvName(std::string_view name);

// nullopt on any malformed, oversized or trailing input.
std::optional<RunSpec> DecodeRunSpec(std::string_view bytes);

// ---- the cell, for a worker started ahead --------------------------------------------
// What a worker started ahead of its run (broker/run/worker_pool.h) is told when it
// starts, before the run is known: whether it will switch ids and, where the run's uid is
// already its own, that identity, and whether it builds the run's view ahead. It takes the
// cell's steps while it waits (worker/main.cc, TakeCellSteps): own session, descriptors,
// the sealed bootstrap, securebits, bounding set, with ids_ahead the identity switch, with
// view_ahead the view's first half and the pid and IPC namespace, with network_ahead the
// run's network namespace but what its rules decide, with landlock_ahead the ruleset's
// first half. The run description that follows must ask for the same
// (CellMatches), or the worker refuses it (kReadSpec, EINVAL): what was set up ahead is
// what the run asked for.
struct CellSpec {
  bool switch_ids = false;
  // The identity switch ahead: only to a uid of the run's own that the broker took for
  // this worker (a per-run uid from a range of at least kUidsAheadMinRange,
  // broker/run/run_uids.h), which no other process has. why not the shared run-as uid:
  // a worker waiting under it could be stopped or signalled by any run of any connection.
  // Without ids_ahead, uid and gid are 0 and the worker switches once its description
  // names them.
  bool ids_ahead = false;
  uint32_t uid = 0;  // with ids_ahead
  uint32_t gid = 0;  // with ids_ahead
  // The run's view ahead (worker/namespaces.h, BeginRunView): the user and mount
  // namespace, the private /tmp and the covers over `hidden_roots` and the operator's
  // directories, then the pid and IPC namespace; the description's skill, module and
  // scratch directories are bound once it names them. Only with ids_ahead or without a
  // switch: the namespace maps the identity the worker already has, which must be the
  // run's.
  bool view_ahead = false;
  std::vector<std::string> hidden_roots;  // with view_ahead: RunSpec::hidden_roots
  // The declared network mode's namespace ahead (worker/egress_cell.h, EnterOwnNetwork):
  // the network namespace with loopback up, the tun route where it can be had, and the
  // resolver's socket; the listeners for the rules' ports and the resolver files come
  // with the description (FinishOwnNetwork). Only with view_ahead: the namespace is made
  // with the capabilities over the view's user namespace, which owns it. With view_ahead
  // it is set exactly for a run in the declared mode (RunSpec::egress_declared,
  // CellMatches).
  bool network_ahead = false;
  // The Landlock ruleset ahead (worker/landlock.h, PrepareLandlockAhead): created with
  // the rules that no run changes (the system's directories and devices, node's
  // directory), opened while the worker waits; the run adds its own and restricts. Only
  // with the run's identity settled (ids_ahead or no switch), since a rule's path is
  // opened as the run's user. The three values are the description's, which must repeat
  // them (CellMatches); a namespaced run also needs view_ahead, so that the rules are
  // looked up in the run's own view.
  bool landlock_ahead = false;
  uint32_t landlock_abi = 0;  // with landlock_ahead: RunSpec::landlock_abi, 1 or more
  bool network_off = false;   // with landlock_ahead: RunSpec::network_off
  std::string node_dir_path;  // with landlock_ahead: RunSpec::node_dir_path
  bool operator==(const CellSpec&) const = default;
};

// The cell a whole description implies (fd 3 a pipe: everything arrives at once and
// nothing waits, so ids_ahead is set for any switch, the shared run-as uid's too,
// view_ahead for any run with namespaces, and network_ahead with it for a declared run).
CellSpec CellOf(const RunSpec& spec);

// Whether `spec` asks for exactly what `cell` set up: the same switch_ids; with ids_ahead,
// the same uid and gid; with view_ahead, namespaces, the same hidden_roots, and
// egress_declared exactly when the cell has network_ahead; with landlock_ahead, the same
// landlock_abi, network_off and node_dir_path, and view_ahead if it has namespaces; a
// probe never follows a cell.
bool CellMatches(const CellSpec& cell, const RunSpec& spec);

// On the stream socket the cell comes first, framed: u32 length N (little-endian), then N
// bytes "SMCS" u32 version | u8 switch_ids u8 ids_ahead | u32 uid u32 gid | u8 view_ahead
// | u32 rootc, rootc x str | u8 network_ahead | u8 landlock_ahead u32 landlock_abi
// u8 network_off | str node_dir_path (str = u32 length + bytes); the run description
// (EncodeRunSpec) follows to EOF. Valid (IsValidCellSpec): ids_ahead only with
// switch_ids, without it uid and gid 0; view_ahead only with ids_ahead or without
// switch_ids; hidden_roots only with view_ahead, at most kRunSpecMaxHiddenRoots, each
// normalised, absolute and not "/"; network_ahead only with view_ahead; landlock_ahead
// only with ids_ahead or without switch_ids, with an ABI of 1 to kRunSpecMaxLandlockAbi,
// network_off only with ABI 4+, node_dir_path normalised and absolute or empty; without
// landlock_ahead those three are 0, false and empty.
inline constexpr size_t kCellSpecPrefixBytes = 4;
inline constexpr size_t kCellSpecMaxBytes = 4096;  // the framed payload's bound

bool IsValidCellSpec(const CellSpec& cell);

// The frame, length prefix included; nullopt for a cell IsValidCellSpec refuses or one
// whose payload exceeds kCellSpecMaxBytes.
std::optional<std::string> EncodeCellSpec(const CellSpec& cell);

// The payload (without its length prefix); nullopt on anything malformed or invalid,
// another version or trailing bytes.
std::optional<CellSpec> DecodeCellSpec(std::string_view payload);

// ---- setup steps -------------------------------------------------------------------
// One exit-code convention for every launch: a step that fails writes one
// WorkerReport{step, errno} on fd 4 and the process exits with the step's value. kSpawn
// is the broker's forked child before the worker runs (placing the descriptors, exec of
// the worker). The values live in 200..230, a range no ordinary exit uses (signal deaths
// reported by shells are 128+N, at most 192); the report is trusted first and the exit
// code second (a script could itself exit 205).
// The values name the steps, roughly in the order of a run whose cell settles nothing
// ahead. No numbering can follow the order of every path: the limits (205) come after the
// identity switch (208-211) and the view (212-214) where the cell settled those ahead and
// before them where it did not; 201, 202, 204, 206, 207 run twice; the mirror takes 221
// and 223 before the fork (215) and 229 after it. The order on each path is
// worker/main.cc's two lists (TakeCellSteps, then TakeRunSteps and StartRun), spelled out
// in docs/run-description.md ("Steps and exit codes"). The values stay fixed: reports,
// exit codes in operators' logs and the fuzz corpus carry them.
enum class WorkerStep : int32_t {
  kSpawn = 200,          // broker's child: dup2 into 0..7, exec of the worker
  kReadSpec = 201,       // read the cell, or fd 3 to EOF (bounded), and decode; again for
                         // the run of a worker started ahead (after its cell's steps)
  kCheckFds = 202,       // fds 0..2, 4 and 5 (a probe: 0..2 and 4); with the run, 6 and 7
  kSetsid = 203,         // setsid() (own session and group); signals back to default
  kCloseFds = 204,       // close everything above 7; with the run, 3 (the spec)
  kSetLimits = 205,      // prlimits from the spec, RLIMIT_CORE = 0 (once the run is read)
  kSecurebits = 206,     // lock the securebits (only where CAP_SETPCAP allows)
  kDropBounding = 207,   // drop every capability from the bounding set
  kRefuseRootIds = 208,  // target uid/gid 0, or equal to the broker's: refused
  kSetGroups = 209,      // setgroups(0, NULL)
  kSetGid = 210,         // setresgid(gid, gid, gid)
  kSetUid = 211,         // setresuid(uid, uid, uid)
  kUserNamespace = 212,  // with namespaces: unshare(CLONE_NEWUSER|CLONE_NEWNS), id maps
  kMountView = 213,      // with namespaces: private /tmp, roots covered, skill dir bound
  kPidNamespace = 214,   // with namespaces: unshare(CLONE_NEWPID|CLONE_NEWIPC)
  kFork = 215,           // fork the run's first process (and, namespaced, clone node under init;
                         // the worker stays outside as the broker's mirror, worker/cell.h)
  kMountProc = 216,      // with fresh_proc, in the namespace's init: its own /proc
  kDropAmbient = 217,    // clear the ambient capability set
  kDropCaps = 218,       // empty effective, permitted and inheritable
  kVerifyIds = 219,      // getres[ug]id all equal the target; regaining root fails
  kVerifyCaps = 220,     // re-read every set: all empty (bounding where droppable)
  kNoNewPrivs = 221,     // prctl(PR_SET_NO_NEW_PRIVS, 1)
  kLandlock = 222,       // with landlock_abi: the filesystem allowlist (worker/landlock.h)
  kParentDeath = 223,    // PR_SET_PDEATHSIG, then the parent is checked to be alive
  kChdir = 224,          // fchdir(7) into the skill directory, close 7
  kSeccomp = 225,        // install the seccomp policy (seccomp/)
  kExec = 226,           // execveat(5, "", argv, envp, AT_EMPTY_PATH)
  kReadOnlyView = 227,   // with namespaces, last of the view: every mount read-only but the
                         // run's /tmp, /dev/shm, scratch directory and MCP_DATA_DIR
  kOwnNetwork = 228,     // declared network mode: the run's network namespace, its resolver
                         // and listeners (worker/egress_cell.h); with network_ahead its
                         // first half while the worker waits
  kMirrorSeccomp = 229,  // declared network mode, in the mirror after the fork: its own
                         // seccomp filter (worker/mirror_seccomp.h)
};

inline constexpr int32_t kWorkerStepFirst = 200;
inline constexpr int32_t kWorkerStepLast = 230;  // reserved up to here

// A phrase that completes "the worker could not ...".
const char* DescribeWorkerStep(WorkerStep step);

// The step named by a code (a report's step or an exit code), if it is one of ours.
std::optional<WorkerStep> WorkerStepFromCode(int code);

// ---- the worker report (fd 4) -------------------------------------------------------
// Framed: "SMWR" u32 version i32 step i32 err, little-endian, exactly kWorkerReportBytes.
struct WorkerReport {
  WorkerStep step = WorkerStep::kSpawn;
  int32_t err = 0;  // errno of the failing call, 0..4095
};

inline constexpr size_t kWorkerReportBytes = 16;

// Fills `out` with the frame; false (nothing written) when the report is one the
// decoder would refuse. Async-signal-safe: no allocation (spawn's child calls it).
bool EncodeWorkerReport(const WorkerReport& report, char (&out)[kWorkerReportBytes]);

// Strict: exactly kWorkerReportBytes, magic, version, a known step, err in 0..4095.
// nullopt for anything else (a short write, garbage, a second frame).
std::optional<WorkerReport> DecodeWorkerReport(std::string_view bytes);

// ---- the run's end (fd 4) ------------------------------------------------------------
// Written once node has exited and been reaped, by the process that reaped it: the
// namespace's init once its namespace is empty, or the mirror where there is none
// (worker/cell.h). The broker answers on it without waiting for the worker's own exit
// (the teardown of the run's namespaces). Framed like the report, exactly
// kWorkerExitBytes: "SMWX" u32 version u32 code u32 value, code CLD_EXITED with the exit
// code 0..255, or CLD_KILLED / CLD_DUMPED with the signal 1..64 (waitid's si_code and
// si_status). It may follow a WorkerReport (node's own setup failed, then it was
// reaped); nothing follows it.
struct WorkerExit {
  int32_t code = 0;   // CLD_EXITED, CLD_KILLED or CLD_DUMPED
  int32_t value = 0;  // the exit code or the signal
};

inline constexpr size_t kWorkerExitBytes = 16;

// From a wait status (waitpid's); false (nothing written) for a status that is neither
// an exit nor a death by signal. Async-signal-safe: no allocation.
bool EncodeWorkerExit(int wait_status, char (&out)[kWorkerExitBytes]);

// Strict, as DecodeWorkerReport: exactly kWorkerExitBytes, magic, version, a known code
// with a value in its range.
std::optional<WorkerExit> DecodeWorkerExit(std::string_view bytes);

// Everything the broker read on fd 4, as the worker may write it: nothing, a report, the
// run's end, or a report then the run's end. nullopt for anything else.
struct WorkerFrames {
  std::optional<WorkerReport> report;
  std::optional<WorkerExit> exit;
};
std::optional<WorkerFrames> DecodeWorkerFrames(std::string_view bytes);

// The largest WorkerFrames input: a report and the run's end.
inline constexpr size_t kWorkerFramesMaxBytes = kWorkerReportBytes + kWorkerExitBytes;

}  // namespace skillmcp
