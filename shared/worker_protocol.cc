// The worker protocol's encodings: typed, length-capped, little-endian, with a magic and
// one version. Decoding is strict: every count and length is checked against what is
// left before anything is allocated, and trailing bytes are an error. Encoding refuses
// what decoding would refuse.
#include "shared/worker_protocol.h"

#include <signal.h>
#include <sys/wait.h>

#include <set>

#include "shared/landlock_abi.h"
#include "shared/path_prefix.h"

namespace skillmcp {
namespace {

static_assert(kRunSpecMaxLandlockAbi == landlock::kKnownAbi,
              "the protocol carries exactly the ABIs the worker knows the rights of");

constexpr char kMagic[4] = {'S', 'M', 'R', 'S'};
constexpr char kReportMagic[4] = {'S', 'M', 'W', 'R'};
constexpr char kCellMagic[4] = {'S', 'M', 'C', 'S'};
constexpr char kExitMagic[4] = {'S', 'M', 'W', 'X'};
constexpr int32_t kMaxSignal = 64;   // _NSIG - 1 on Linux
constexpr int32_t kMaxErrno = 4095;  // the kernel's own ceiling (MAX_ERRNO)

void PutU8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutString(std::string& out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

void PutStrings(std::string& out, const std::vector<std::string>& list) {
  PutU32(out, static_cast<uint32_t>(list.size()));
  for (const auto& s : list) PutString(out, s);
}

void PutModuleDirs(std::string& out, const std::vector<ModuleDir>& dirs) {
  PutU32(out, static_cast<uint32_t>(dirs.size()));
  for (const ModuleDir& d : dirs) {
    PutString(out, d.path);
    PutU64(out, d.dev);
    PutU64(out, d.ino);
  }
}

// A cursor over untrusted bytes: every read checks the remaining length first.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool U8(uint8_t& v) {
    if (in_.size() < 1) return false;
    v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t& v) {
    if (in_.size() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t& v) {
    if (in_.size() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool Bool(bool& v) {
    uint8_t b = 0;
    if (!U8(b) || b > 1) return false;  // only 0 or 1: no second meaning hides in a flag
    v = b == 1;
    return true;
  }
  bool String(std::string& s) {
    uint32_t len = 0;
    if (!U32(len) || len > in_.size()) return false;  // length checked before allocating
    s.assign(in_.substr(0, len));
    in_.remove_prefix(len);
    return true;
  }
  // `budget` is how many strings may still be read across argv and envp.
  bool Strings(std::vector<std::string>& list, size_t& budget) {
    uint32_t count = 0;
    if (!U32(count) || count > budget) return false;
    // Each string costs at least its 4-byte length: a count the input cannot hold is
    // refused before reserving anything.
    if (count > in_.size() / 4) return false;
    budget -= count;
    list.resize(count);
    for (auto& s : list)
      if (!String(s)) return false;
    return true;
  }
  // At most `max` entries of (str path, u64 dev, u64 ino).
  bool ModuleDirs(std::vector<ModuleDir>& dirs, size_t max) {
    uint32_t count = 0;
    if (!U32(count) || count > max) return false;
    // Each entry costs at least 20 bytes (an empty path's length, dev, ino): a count the
    // input cannot hold is refused before reserving anything.
    if (count > in_.size() / 20) return false;
    dirs.resize(count);
    for (ModuleDir& d : dirs)
      if (!String(d.path) || !U64(d.dev) || !U64(d.ino)) return false;
    return true;
  }
  bool Magic(const char (&magic)[4]) {
    if (in_.size() < 4 || in_.substr(0, 4) != std::string_view(magic, 4)) return false;
    in_.remove_prefix(4);
    return true;
  }
  bool AtEnd() const { return in_.empty(); }

 private:
  std::string_view in_;
};

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

bool IsAbsolutePath(std::string_view s) { return !s.empty() && s[0] == '/' && !HasNul(s); }

bool IsEnvNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }

bool IsEnvNameChar(char c) { return IsEnvNameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

bool IsEnvName(std::string_view name) {
  if (name.empty() || !IsEnvNameStart(name[0])) return false;
  for (char c : name)
    if (!IsEnvNameChar(c)) return false;
  return true;
}

namespace {

// NAME=value with a portable name: anything else could be read differently by libc,
// node and the script (e.g. "=x", "A B=x", or a bare "PATH" without '=').
bool IsEnvEntry(std::string_view entry, std::string_view& name) {
  const size_t eq = entry.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  name = entry.substr(0, eq);
  return IsEnvName(name);
}

bool IsNormalisedOrEmpty(std::string_view s) { return s.empty() || IsNormalisedAbsolutePath(s); }

// The Landlock fields (worker/landlock.h).
bool IsValidLandlockPart(const RunSpec& spec) {
  if (spec.landlock_abi > kRunSpecMaxLandlockAbi) return false;
  // why: refusing TCP needs ABI 4; a spec asking it of less would run with TCP allowed.
  if (spec.network_off && spec.landlock_abi < 4) return false;
  // why normalised: the worker compares these paths with each other (a rule beneath another
  // that grants as much is dropped); "/usr/local/" or "/usr//local" must not read as
  // another directory. The broker sends real paths (broker/run/supervisor.cc).
  if (!IsNormalisedOrEmpty(spec.scratch_dir_path) || !IsNormalisedOrEmpty(spec.data_dir_path) ||
      !IsNormalisedOrEmpty(spec.node_dir_path))
    return false;
  if (spec.read_dirs.size() > kRunSpecMaxReadDirs) return false;
  // why a non-zero inode: a directory sent without the identity the broker checked could
  // not be told from one swapped in after the check (worker/module_dir.h).
  for (const ModuleDir& dir : spec.read_dirs)
    if (!IsAbsolutePath(dir.path) || dir.ino == 0) return false;
  // Rules that would not be applied: the broker meant something else. why read_dirs
  // with namespaces: the run's view binds them back over its covers (worker/namespaces.h).
  if (spec.landlock_abi == 0)
    return spec.data_dir_path.empty() && spec.node_dir_path.empty() &&
           (spec.read_dirs.empty() || spec.namespaces);
  return true;
}

}  // namespace

bool IsValidRunSpec(const RunSpec& spec) {
  if (spec.args.size() + spec.envp.size() > kRunSpecMaxStrings) return false;
  if (HasNul(spec.script_path)) return false;
  for (const auto& a : spec.args)
    if (HasNul(a)) return false;  // argv strings are C strings: a NUL would cut one short
  std::set<std::string_view> names;
  for (const auto& e : spec.envp) {
    std::string_view name;
    if (HasNul(e) || !IsEnvEntry(e, name)) return false;
    // A name twice is ambiguous (libc takes the first, others the last): refuse it.
    if (!names.insert(name).second) return false;
  }
  // why: seccomp on with no program would run the script unfiltered; fail closed.
  if (spec.seccomp) {
    if (!IsPlausibleBpf(spec.seccomp_bpf)) return false;
  } else if (!spec.seccomp_bpf.empty()) {
    return false;  // a program that would not be loaded: the broker meant something else
  }
  if (spec.namespaces) {
    if (!IsAbsolutePath(spec.skill_dir_path)) return false;
    if (spec.hidden_roots.size() > kRunSpecMaxHiddenRoots) return false;
    for (const auto& root : spec.hidden_roots)
      if (!IsAbsolutePath(root) || root == "/") return false;  // "/" would hide everything
  } else if (!spec.skill_dir_path.empty() || !spec.hidden_roots.empty()) {
    return false;
  }
  if (!IsValidLandlockPart(spec)) return false;
  // A fresh /proc belongs to the run's pid namespace (a probe always tries that one).
  if (spec.fresh_proc && !spec.namespaces && !spec.probe) return false;
  if (spec.probe) {
    // A probe runs nothing: a script, arguments, variables or a filter would be a
    // broker that meant a run.
    return spec.script_path.empty() && spec.args.empty() && spec.envp.empty() && !spec.seccomp &&
           spec.landlock_abi == 0 && spec.scratch_dir_path.empty();
  }
  // The bootstrap names the module by this path; a relative one would resolve against
  // the cwd and give the script a wrong __filename and require() base.
  return !spec.script_path.empty() && spec.script_path[0] == '/';
}

std::optional<std::string> EncodeRunSpec(const RunSpec& spec) {
  // why: what the worker would refuse is refused here, before a process exists; no
  // length is ever cut to fit its field.
  if (!IsValidRunSpec(spec)) return std::nullopt;
  std::string out(kMagic, sizeof(kMagic));
  PutU32(out, kWorkerProtocolVersion);
  PutU8(out, spec.probe ? 1 : 0);
  PutU8(out, spec.switch_ids ? 1 : 0);
  PutU8(out, spec.seccomp ? 1 : 0);
  PutU8(out, spec.namespaces ? 1 : 0);
  PutU32(out, spec.uid);
  PutU32(out, spec.gid);
  PutU64(out, spec.limits.nproc);
  PutU64(out, spec.limits.address_space);
  PutU64(out, spec.limits.data);
  PutU64(out, spec.limits.cpu_seconds);
  PutU64(out, spec.limits.fsize);
  PutU64(out, spec.limits.nofile);
  PutString(out, spec.script_path);
  PutStrings(out, spec.args);
  PutStrings(out, spec.envp);
  PutString(out, spec.seccomp_bpf);
  PutString(out, spec.skill_dir_path);
  PutStrings(out, spec.hidden_roots);
  PutU32(out, spec.landlock_abi);
  PutU8(out, spec.network_off ? 1 : 0);
  PutString(out, spec.scratch_dir_path);
  PutString(out, spec.data_dir_path);
  PutString(out, spec.node_dir_path);
  PutModuleDirs(out, spec.read_dirs);
  PutU8(out, spec.fresh_proc ? 1 : 0);
  if (out.size() > kRunSpecMaxBytes) return std::nullopt;
  return out;
}

std::optional<RunSpec> DecodeRunSpec(std::string_view bytes) {
  if (bytes.size() > kRunSpecMaxBytes) return std::nullopt;
  Reader r(bytes);
  RunSpec spec;
  uint32_t version = 0;
  if (!r.Magic(kMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.Bool(spec.probe) || !r.Bool(spec.switch_ids) || !r.Bool(spec.seccomp) || !r.Bool(spec.namespaces))
    return std::nullopt;
  if (!r.U32(spec.uid) || !r.U32(spec.gid)) return std::nullopt;
  RunLimits& l = spec.limits;
  if (!r.U64(l.nproc) || !r.U64(l.address_space) || !r.U64(l.data) || !r.U64(l.cpu_seconds) ||
      !r.U64(l.fsize) || !r.U64(l.nofile))
    return std::nullopt;
  if (!r.String(spec.script_path)) return std::nullopt;
  size_t budget = kRunSpecMaxStrings;
  if (!r.Strings(spec.args, budget) || !r.Strings(spec.envp, budget)) return std::nullopt;
  if (!r.String(spec.seccomp_bpf) || !r.String(spec.skill_dir_path)) return std::nullopt;
  size_t root_budget = kRunSpecMaxHiddenRoots;
  if (!r.Strings(spec.hidden_roots, root_budget)) return std::nullopt;
  if (!r.U32(spec.landlock_abi) || !r.Bool(spec.network_off) || !r.String(spec.scratch_dir_path) ||
      !r.String(spec.data_dir_path) || !r.String(spec.node_dir_path) ||
      !r.ModuleDirs(spec.read_dirs, kRunSpecMaxReadDirs))
    return std::nullopt;
  if (!r.Bool(spec.fresh_proc)) return std::nullopt;
  if (!r.AtEnd()) return std::nullopt;  // trailing bytes: not what the broker meant
  if (!IsValidRunSpec(spec)) return std::nullopt;
  return spec;
}

CellSpec CellOf(const RunSpec& spec) {
  CellSpec cell;
  cell.switch_ids = spec.switch_ids;
  cell.ids_ahead = spec.switch_ids;
  if (spec.switch_ids) {
    cell.uid = spec.uid;
    cell.gid = spec.gid;
  }
  cell.view_ahead = spec.namespaces && !spec.probe;
  if (cell.view_ahead) cell.hidden_roots = spec.hidden_roots;
  return cell;
}

bool CellMatches(const CellSpec& cell, const RunSpec& spec) {
  // why: a probe is its own whole description (fd 3 a pipe), never a run after a cell.
  if (spec.probe || cell.switch_ids != spec.switch_ids) return false;
  if (cell.ids_ahead && (cell.uid != spec.uid || cell.gid != spec.gid)) return false;
  // why: the view built ahead hides exactly the cell's roots; a run that asked for none,
  // or for other roots, would run in a view it did not ask for.
  if (cell.view_ahead && (!spec.namespaces || cell.hidden_roots != spec.hidden_roots)) return false;
  // why: the rules ahead were made for exactly these values; a namespaced run's rules
  // must have been looked up in its own view (the covers are what they reach).
  return !cell.landlock_ahead ||
         (cell.landlock_abi == spec.landlock_abi && cell.network_off == spec.network_off &&
          cell.node_dir_path == spec.node_dir_path && (!spec.namespaces || cell.view_ahead));
}

bool IsValidCellSpec(const CellSpec& cell) {
  // why: a switch ahead for a broker that does not switch, or ids that would not be
  // used, is a broker that meant something else.
  if (cell.ids_ahead ? !cell.switch_ids : (cell.uid != 0 || cell.gid != 0)) return false;
  // why: the view's user namespace maps the identity the worker holds when it builds it,
  // which is the run's only with ids_ahead or without any switch.
  if (cell.view_ahead && cell.switch_ids && !cell.ids_ahead) return false;
  if (!cell.view_ahead && !cell.hidden_roots.empty()) return false;
  if (cell.hidden_roots.size() > kRunSpecMaxHiddenRoots) return false;
  // why normalised: the worker matches paths to the roots by their text ("/srv/./x" or
  // "//srv" would be another path than the one meant).
  for (const auto& root : cell.hidden_roots)
    if (!IsNormalisedAbsolutePath(root) || root == "/") return false;  // "/" hides everything
  if (!cell.landlock_ahead)
    return cell.landlock_abi == 0 && !cell.network_off && cell.node_dir_path.empty();
  // why: a rule's path is opened as the run's user, which the worker is only with
  // ids_ahead or without any switch.
  if (cell.switch_ids && !cell.ids_ahead) return false;
  if (cell.landlock_abi == 0 || cell.landlock_abi > kRunSpecMaxLandlockAbi) return false;
  if (cell.network_off && cell.landlock_abi < 4) return false;  // as in a run description
  return IsNormalisedOrEmpty(cell.node_dir_path);
}

std::optional<std::string> EncodeCellSpec(const CellSpec& cell) {
  if (!IsValidCellSpec(cell)) return std::nullopt;
  std::string payload(kCellMagic, sizeof(kCellMagic));
  PutU32(payload, kWorkerProtocolVersion);
  PutU8(payload, cell.switch_ids ? 1 : 0);
  PutU8(payload, cell.ids_ahead ? 1 : 0);
  PutU32(payload, cell.uid);
  PutU32(payload, cell.gid);
  PutU8(payload, cell.view_ahead ? 1 : 0);
  PutStrings(payload, cell.hidden_roots);
  PutU8(payload, cell.landlock_ahead ? 1 : 0);
  PutU32(payload, cell.landlock_abi);
  PutU8(payload, cell.network_off ? 1 : 0);
  PutString(payload, cell.node_dir_path);
  if (payload.size() > kCellSpecMaxBytes) return std::nullopt;  // the worker would refuse it
  std::string out;
  PutU32(out, static_cast<uint32_t>(payload.size()));
  return out + payload;
}

std::optional<CellSpec> DecodeCellSpec(std::string_view payload) {
  if (payload.size() > kCellSpecMaxBytes) return std::nullopt;
  Reader r(payload);
  CellSpec cell;
  uint32_t version = 0;
  if (!r.Magic(kCellMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.Bool(cell.switch_ids) || !r.Bool(cell.ids_ahead) || !r.U32(cell.uid) || !r.U32(cell.gid))
    return std::nullopt;
  size_t root_budget = kRunSpecMaxHiddenRoots;
  if (!r.Bool(cell.view_ahead) || !r.Strings(cell.hidden_roots, root_budget)) return std::nullopt;
  if (!r.Bool(cell.landlock_ahead) || !r.U32(cell.landlock_abi) || !r.Bool(cell.network_off) ||
      !r.String(cell.node_dir_path))
    return std::nullopt;
  if (!r.AtEnd()) return std::nullopt;  // trailing bytes: not what the broker meant
  if (!IsValidCellSpec(cell)) return std::nullopt;
  return cell;
}

const char* DescribeWorkerStep(WorkerStep step) {
  switch (step) {
    case WorkerStep::kSpawn:
      return "be started by the broker (placing its descriptors, exec of the worker binary)";
    case WorkerStep::kReadSpec:
      return "read a valid run description from the broker";
    case WorkerStep::kCheckFds:
      return "find the expected descriptors (report, node, script, skill dir)";
    case WorkerStep::kSetsid:
      return "start its own session and process group with default signal handling";
    case WorkerStep::kCloseFds:
      return "close the inherited descriptors";
    case WorkerStep::kSetLimits:
      return "apply the resource limits";
    case WorkerStep::kSecurebits:
      return "lock the securebits";
    case WorkerStep::kDropBounding:
      return "drop the capability bounding set";
    case WorkerStep::kRefuseRootIds:
      return "accept the run-as identity (root, or the broker's own uid or gid, is refused)";
    case WorkerStep::kSetGroups:
      return "drop the supplementary groups";
    case WorkerStep::kSetGid:
      return "switch to the run-as gid";
    case WorkerStep::kSetUid:
      return "switch to the run-as uid";
    case WorkerStep::kUserNamespace:
      return "create the run's user and mount namespace";
    case WorkerStep::kMountView:
      return "build the run's filesystem view (private /tmp, other skills hidden)";
    case WorkerStep::kDropAmbient:
      return "clear the ambient capabilities";
    case WorkerStep::kDropCaps:
      return "clear the effective, permitted and inheritable capabilities";
    case WorkerStep::kVerifyIds:
      return "verify that the uid/gid switch cannot be undone";
    case WorkerStep::kVerifyCaps:
      return "verify that no capability is left";
    case WorkerStep::kNoNewPrivs:
      return "set no_new_privs";
    case WorkerStep::kLandlock:
      return "restrict itself to the run's filesystem allowlist (Landlock)";
    case WorkerStep::kChdir:
      return "enter the skill directory";
    case WorkerStep::kSeccomp:
      return "install the seccomp filter";
    case WorkerStep::kExec:
      return "execute the interpreter";
    case WorkerStep::kPidNamespace:
      return "create the run's pid and IPC namespace";
    case WorkerStep::kFork:
      return "start the run's first process";
    case WorkerStep::kMountProc:
      return "mount the run's own /proc";
    case WorkerStep::kParentDeath:
      return "tie the run's life to its parent (parent-death signal)";
  }
  return "complete an unknown setup step";
}

std::optional<WorkerStep> WorkerStepFromCode(int code) {
  const bool known =
      code >= static_cast<int>(WorkerStep::kSpawn) && code <= static_cast<int>(WorkerStep::kExec);
  if (!known) return std::nullopt;
  return static_cast<WorkerStep>(code);
}

namespace {

void PutU32At(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

bool EncodeWorkerReport(const WorkerReport& report, char (&out)[kWorkerReportBytes]) {
  const auto step = static_cast<int32_t>(report.step);
  if (!WorkerStepFromCode(step) || report.err < 0 || report.err > kMaxErrno) return false;
  for (int i = 0; i < 4; ++i) out[i] = kReportMagic[i];
  PutU32At(out + 4, kWorkerProtocolVersion);
  PutU32At(out + 8, static_cast<uint32_t>(step));
  PutU32At(out + 12, static_cast<uint32_t>(report.err));
  return true;
}

std::optional<WorkerReport> DecodeWorkerReport(std::string_view bytes) {
  if (bytes.size() != kWorkerReportBytes) return std::nullopt;
  Reader r(bytes);
  uint32_t version = 0, step = 0, err = 0;
  if (!r.Magic(kReportMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.U32(step) || !r.U32(err) || !r.AtEnd()) return std::nullopt;
  const int32_t code = static_cast<int32_t>(step);
  const int32_t e = static_cast<int32_t>(err);
  std::optional<WorkerStep> known = WorkerStepFromCode(code);
  if (!known || e < 0 || e > kMaxErrno) return std::nullopt;
  return WorkerReport{*known, e};
}

bool EncodeWorkerExit(int wait_status, char (&out)[kWorkerExitBytes]) {
  int32_t code = 0, value = 0;
  if (WIFEXITED(wait_status)) {
    code = CLD_EXITED;
    value = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    code = WCOREDUMP(wait_status) ? CLD_DUMPED : CLD_KILLED;
    value = WTERMSIG(wait_status);
    if (value < 1 || value > kMaxSignal) return false;
  } else {
    return false;  // stopped or continued: not an end
  }
  for (int i = 0; i < 4; ++i) out[i] = kExitMagic[i];
  PutU32At(out + 4, kWorkerProtocolVersion);
  PutU32At(out + 8, static_cast<uint32_t>(code));
  PutU32At(out + 12, static_cast<uint32_t>(value));
  return true;
}

std::optional<WorkerExit> DecodeWorkerExit(std::string_view bytes) {
  if (bytes.size() != kWorkerExitBytes) return std::nullopt;
  Reader r(bytes);
  uint32_t version = 0, code = 0, value = 0;
  if (!r.Magic(kExitMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.U32(code) || !r.U32(value) || !r.AtEnd()) return std::nullopt;
  const bool exited = code == CLD_EXITED && value <= 255;
  const bool signalled = (code == CLD_KILLED || code == CLD_DUMPED) && value >= 1 &&
                         value <= static_cast<uint32_t>(kMaxSignal);
  if (!exited && !signalled) return std::nullopt;
  return WorkerExit{static_cast<int32_t>(code), static_cast<int32_t>(value)};
}

std::optional<WorkerFrames> DecodeWorkerFrames(std::string_view bytes) {
  WorkerFrames frames;
  if (bytes.empty()) return frames;
  // A report can only come first: the run's end is the last thing written on fd 4.
  if (bytes.size() == kWorkerReportBytes || bytes.size() == kWorkerFramesMaxBytes) {
    frames.report = DecodeWorkerReport(bytes.substr(0, kWorkerReportBytes));
    if (frames.report) bytes.remove_prefix(kWorkerReportBytes);
  }
  if (!bytes.empty()) {
    frames.exit = DecodeWorkerExit(bytes);
    if (!frames.exit) return std::nullopt;
  }
  return frames;
}

}  // namespace skillmcp
