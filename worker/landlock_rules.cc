#include "worker/landlock_rules.h"

#include <algorithm>

#include "shared/landlock_abi.h"
#include "shared/path_prefix.h"

namespace skillmcp::worker {
namespace {

using namespace skillmcp::landlock;

constexpr uint64_t kAbi1Fs = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir |
                             kRemoveFile | kMakeChar | kMakeDir | kMakeReg | kMakeSock |
                             kMakeFifo | kMakeBlock | kMakeSym;

constexpr uint64_t kRead = kReadFile | kReadDir;
constexpr uint64_t kReadExec = kRead | kExecute;
// Everything a program does in a directory of its own, except device nodes (which need a
// capability the run never has anyway) and device ioctls.
constexpr uint64_t kReadWrite = kRead | kWriteFile | kRemoveDir | kRemoveFile | kMakeDir |
                                kMakeReg | kMakeSock | kMakeFifo | kMakeSym | kRefer | kTruncate;
constexpr uint64_t kDevice = kReadFile | kWriteFile | kTruncate;  // `> /dev/null` truncates

// The system, read and execute. /lib* covers every multiarch layout; a missing one is
// skipped. why: /etc holds what libc, TLS and time zones read; DAC still guards the
// files in it the run-as user may not read.
constexpr const char* kSystemDirs[] = {"/usr",  "/lib", "/lib32", "/lib64", "/libx32",
                                       "/bin",  "/sbin", "/etc"};
// Read only: node reads /proc/self/* and the CPU list (os.cpus()); /proc's own rules
// (ptrace access checks, hidepid) still guard other processes.
constexpr const char* kProcDir = "/proc";
constexpr const char* kCpuListDir = "/sys/devices/system/cpu";
// why: the devices node and libc open by name; nothing else under /dev (no /dev/shm).
constexpr const char* kDevices[] = {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"};

void Add(LandlockPlan& plan, std::string path, uint64_t access, bool required,
         bool named = false) {
  plan.rules.push_back({std::move(path), false, access & plan.handled_fs, required, named});
}

void AddAhead(LandlockPlan& plan, std::string path, uint64_t access, bool required,
              bool named = false) {
  Add(plan, std::move(path), access, required, named);
  plan.rules.back().ahead = true;
}

bool IsPlain(const LandlockPathRule& r) { return !r.from_skill_fd && !r.module_dir; }

// Whether `other` already grants `r` (both plain): the same directory or one above it, and
// at least the same rights. Of two equal rules the first is kept.
bool Covers(const LandlockPathRule& other, size_t other_at, const LandlockPathRule& r,
            size_t r_at) {
  if ((r.access & ~other.access) != 0 || !IsSameOrBeneath(r.path, other.path)) return false;
  return r.path != other.path || r.access != other.access || other_at < r_at;
}

// why: a rule beneath another that grants as much adds nothing but work, and a rule
// granted around an operator's directory costs a few system calls per entry (node's
// prefix /usr repeated the system's /usr). Both would be granted around the same
// directories (worker/landlock.cc), so nothing changes but the cost; a required path
// dropped this way (node's prefix) still fails the run at exec if it is missing.
void DropCoveredRules(LandlockPlan& plan) {
  std::vector<LandlockPathRule> kept;
  for (size_t i = 0; i < plan.rules.size(); ++i) {
    const LandlockPathRule& r = plan.rules[i];
    bool covered = false;
    for (size_t j = 0; IsPlain(r) && j < plan.rules.size() && !covered; ++j)
      covered = j != i && IsPlain(plan.rules[j]) && Covers(plan.rules[j], j, r, i);
    if (!covered) kept.push_back(r);
  }
  plan.rules = std::move(kept);
}

}  // namespace

uint64_t HandledFsAccess(uint32_t abi) {
  if (abi == 0) return 0;
  uint64_t fs = kAbi1Fs;
  if (abi >= 2) fs |= kRefer;
  if (abi >= 3) fs |= kTruncate;
  if (abi >= 5) fs |= kIoctlDev;
  return fs;
}

uint64_t FileOnlyAccess(uint64_t access) {
  return access & (kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev);
}

LandlockPlan BuildLandlockPlan(const RunSpec& spec) {
  LandlockPlan plan;
  plan.abi = std::min(spec.landlock_abi, kKnownAbi);
  if (plan.abi == 0) return plan;
  plan.handled_fs = HandledFsAccess(plan.abi);
  plan.attr_size = sizeof(uint64_t);
  if (plan.abi >= 4) {
    plan.attr_size = 2 * sizeof(uint64_t);
    // why: handled with no port rule, so every TCP connect and bind is refused.
    if (spec.network_off) plan.handled_net = kNetBindTcp | kNetConnectTcp;
  }
  if (plan.abi >= 6) {
    plan.attr_size = sizeof(RulesetAttr);
    // why: a run signals and reaches abstract sockets only within itself, so it can
    // neither signal its broker nor talk to a same-uid service, even under the same uid.
    plan.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  }
  for (const char* dir : kSystemDirs) AddAhead(plan, dir, kReadExec, false);
  if (!spec.node_dir_path.empty()) AddAhead(plan, spec.node_dir_path, kReadExec, true, true);
  // why not /proc ahead: a namespaced run's is the fresh one its init mounts.
  Add(plan, kProcDir, kRead, false);
  AddAhead(plan, kCpuListDir, kRead, false);
  for (const char* dev : kDevices) AddAhead(plan, dev, kDevice, false);
  plan.rules.push_back({"", true, kRead & plan.handled_fs, true});
  for (const ModuleDir& dir : spec.read_dirs) {
    Add(plan, dir.path, kRead, false);
    plan.rules.back().module_dir = true;
    plan.rules.back().module_dev = dir.dev;
    plan.rules.back().module_ino = dir.ino;
  }
  // why: the scratch directory is the run's TMPDIR; tools unpack and run helpers there.
  if (!spec.scratch_dir_path.empty())
    Add(plan, spec.scratch_dir_path, kReadWrite | kExecute, true, true);
  // why no rule for a namespaced run's private /tmp: the view binds the skill directory
  // (and the scratch directory) beneath it when they live under /tmp, and a rule grants
  // everything beneath its directory, mounts included: the skill would become writable.
  if (!spec.data_dir_path.empty()) Add(plan, spec.data_dir_path, kReadWrite, false, true);
  DropCoveredRules(plan);
  return plan;
}

LandlockPlan BuildLandlockAheadPlan(uint32_t landlock_abi, bool network_off,
                                    const std::string& node_dir_path) {
  RunSpec spec;
  spec.landlock_abi = landlock_abi;
  spec.network_off = network_off;
  spec.node_dir_path = node_dir_path;
  LandlockPlan plan = BuildLandlockPlan(spec);
  std::erase_if(plan.rules, [](const LandlockPathRule& r) { return !r.ahead; });
  return plan;
}

}  // namespace skillmcp::worker
