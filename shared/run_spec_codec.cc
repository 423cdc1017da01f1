// The run description's codec (shared/worker_protocol.h, RunSpec): its rules, and its
// encoding over the protocol's wire primitives (shared/worker_wire.h). Decoding is strict:
// every count and length is checked against what is left before anything is allocated,
// and trailing bytes are an error. Encoding refuses what decoding would refuse.
#include <set>

#include "shared/landlock_abi.h"
#include "shared/worker_protocol.h"
#include "shared/worker_wire.h"

namespace skillmcp {
namespace {

using wire::IsNormalisedOrEmpty;
using wire::PutModuleDirs;
using wire::PutString;
using wire::PutStrings;
using wire::PutU32;
using wire::PutU64;
using wire::PutU8;
using wire::Reader;

static_assert(kRunSpecMaxLandlockAbi == landlock::kKnownAbi,
              "the protocol carries exactly the ABIs the worker knows the rights of");

constexpr char kMagic[4] = {'S', 'M', 'R', 'S'};

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
  // Rules that would not be applied: the broker meant something else. why read_dirs and
  // the data directory with namespaces: the run's view binds them back over its covers
  // (worker/namespaces.h).
  if (spec.landlock_abi == 0)
    return (spec.data_dir_path.empty() || spec.namespaces) && spec.node_dir_path.empty() &&
           (spec.read_dirs.empty() || spec.namespaces);
  return true;
}

// The declared network mode's fields (shared/egress_allowlist.h).
bool IsValidEgressPart(const RunSpec& spec) {
  if (!spec.egress_declared) return spec.egress_rules.empty();
  // A probe only tries to make the namespace (worker/main.cc, Probe): it has no rules.
  if (spec.probe) return spec.egress_rules.empty();
  // why: the run's own network namespace comes with its user namespace; without one the
  // mode could only run with the host's network, which it must never do.
  if (!spec.namespaces) return false;
  if (spec.egress_rules.size() > kRunSpecMaxEgressRules) return false;
  for (const EgressRule& rule : spec.egress_rules) {
    // why: the mirror answers names by comparing them with these hosts, as the broker
    // does; a host in another form would be answered differently on the two sides.
    if (NormaliseEgressHost(rule.host, /*wildcard=*/true) != rule.host) return false;
    if (rule.ports.empty() || rule.ports.size() > kRunSpecMaxEgressPorts) return false;
    for (size_t i = 0; i < rule.ports.size(); ++i) {
      if (rule.ports[i] == 0 || (i > 0 && rule.ports[i] <= rule.ports[i - 1])) return false;
    }
  }
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
  if (!IsValidEgressPart(spec)) return false;
  // why: a declared run's mirror holds sockets of the helper's network; with seccomp on
  // it never runs without its own filter (fail closed), and never gets one it would not load.
  if (spec.egress_declared && spec.seccomp) {
    if (!IsPlausibleBpf(spec.mirror_bpf)) return false;
  } else if (!spec.mirror_bpf.empty()) {
    return false;
  }
  // A fresh /proc belongs to the run's pid namespace (a probe always tries that one).
  if (spec.fresh_proc && !spec.namespaces && !spec.probe) return false;
  // why: python3 finds its prefix from argv[0]; node is started as "node" (its own
  // execPath comes from /proc/self/exe), so a path there would be meant for another kind.
  if (spec.interpreter == InterpreterKind::kPython3) {
    if (!IsAbsolutePath(spec.interpreter_path) || !IsNormalisedOrEmpty(spec.interpreter_path))
      return false;
  } else if (spec.interpreter != InterpreterKind::kNode || !spec.interpreter_path.empty()) {
    return false;
  }
  if (spec.probe) {
    // A probe runs nothing: a script, arguments, variables or a filter would be a
    // broker that meant a run.
    return spec.script_path.empty() && spec.args.empty() && spec.envp.empty() && !spec.seccomp &&
           spec.landlock_abi == 0 && spec.scratch_dir_path.empty() &&
           spec.interpreter == InterpreterKind::kNode;
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
  PutU8(out, static_cast<uint8_t>(spec.interpreter));
  PutString(out, spec.interpreter_path);
  PutU8(out, spec.egress_declared ? 1 : 0);
  PutU32(out, static_cast<uint32_t>(spec.egress_rules.size()));
  for (const EgressRule& rule : spec.egress_rules) {
    PutString(out, rule.host);
    PutU32(out, static_cast<uint32_t>(rule.ports.size()));
    for (uint16_t port : rule.ports) PutU32(out, port);
  }
  PutString(out, spec.mirror_bpf);
  if (out.size() > kRunSpecMaxBytes) return std::nullopt;
  return out;
}

namespace {

// At most kRunSpecMaxEgressRules of (str host, u32 portc, portc x u32 port), each count
// checked against its bound before anything is reserved.
bool ReadEgressRules(Reader& r, std::vector<EgressRule>& rules) {
  uint32_t count = 0;
  if (!r.U32(count) || count > kRunSpecMaxEgressRules) return false;
  rules.resize(count);
  for (EgressRule& rule : rules) {
    uint32_t ports = 0;
    if (!r.String(rule.host) || !r.U32(ports) || ports > kRunSpecMaxEgressPorts) return false;
    rule.ports.resize(ports);
    for (uint16_t& port : rule.ports) {
      uint32_t v = 0;
      if (!r.U32(v) || v > 65535) return false;
      port = static_cast<uint16_t>(v);
    }
  }
  return true;
}

}  // namespace

std::optional<RunSpec> DecodeRunSpec(std::string_view bytes) {
  if (bytes.size() > kRunSpecMaxBytes) return std::nullopt;
  Reader r(bytes);
  RunSpec spec;
  uint32_t version = 0;
  if (!r.Magic(kMagic) || !r.U32(version) || version != kWorkerProtocolVersion) return std::nullopt;
  if (!r.Bool(spec.probe) || !r.Bool(spec.switch_ids) || !r.Bool(spec.seccomp) ||
      !r.Bool(spec.namespaces))
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
  uint8_t kind = 0;
  if (!r.U8(kind) || kind > static_cast<uint8_t>(InterpreterKind::kPython3) ||
      !r.String(spec.interpreter_path))
    return std::nullopt;
  spec.interpreter = static_cast<InterpreterKind>(kind);
  if (!r.Bool(spec.egress_declared) || !ReadEgressRules(r, spec.egress_rules) ||
      !r.String(spec.mirror_bpf))
    return std::nullopt;
  if (!r.AtEnd()) return std::nullopt;  // trailing bytes: not what the broker meant
  if (!IsValidRunSpec(spec)) return std::nullopt;
  return spec;
}

}  // namespace skillmcp
