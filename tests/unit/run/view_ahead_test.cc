// A worker started ahead with a uid of its own builds the first half of its run's view
// while it waits (CellSpec::view_ahead, worker/namespaces.h): its user and mount
// namespace, the private /tmp and the covers. The description then binds the skill
// directory beneath its root's descriptor, checked against fd 7. As root, switching to
// 65534, with a skills root outside /tmp (covered by a tmpfs of its own). In the declared
// network mode it makes the run's network namespace with the view (CellSpec::network_ahead).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "tests/unit/run/started_worker.h"

namespace skillmcp {
namespace {

using namespace started_worker;  // NOLINT(google-build-using-namespace): the test helpers

class ViewAhead : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the worker's switch to 65534 needs root";
    // Outside /tmp, which the view covers first: the skills root gets a cover of its own.
    // On a tmpfs of the test's, shared as systemd makes every host mount (this test's host
    // may keep them private), so a new mount namespace receives its mounts as slaves.
    char base[] = "/var/tmp/skill-mcp-view-ahead-XXXXXX";
    ASSERT_NE(mkdtemp(base), nullptr) << strerror(errno);
    base_ = base;
    ASSERT_EQ(mount("tmpfs", base, "tmpfs", 0, "mode=0755,size=1m"), 0) << strerror(errno);
    ASSERT_EQ(mount(nullptr, base, nullptr, MS_SHARED, nullptr), 0) << strerror(errno);
    root_ = base_ + "/root";
    for (const std::string& d : {root_, root_ + "/skill", root_ + "/other", base_ + "/mnt"})
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
  }
  void TearDown() override {
    if (spawned_) {
      kill(spawned_->pid, SIGKILL);
      waitpid(spawned_->pid, nullptr, 0);
    }
    if (!base_.empty()) {
      umount2(base_.c_str(), MNT_DETACH);  // with whatever the test mounted beneath it
      rmdir(base_.c_str());
    }
  }
  CellSpec Cell() const {
    CellSpec cell;
    cell.switch_ids = cell.ids_ahead = true;
    cell.uid = cell.gid = 65534;
    cell.view_ahead = true;
    cell.hidden_roots = {root_};
    return cell;
  }
  RunSpec Spec() const {
    RunSpec spec = PlainSpec();
    spec.switch_ids = true;
    spec.uid = spec.gid = 65534;
    spec.namespaces = true;
    spec.skill_dir_path = root_ + "/skill";
    spec.hidden_roots = {root_};
    return spec;
  }
  void Start(const CellSpec& cell) {
    spawned_ = StartWorker();
    ASSERT_TRUE(spawned_.has_value());
    SendWith(spawned_->spec.get(), EncodeCellSpec(cell).value(), {});
  }
  void Start() { Start(Cell()); }
  // Sends `spec` with a regular file as 6 and `skill_dir` (opened O_PATH) as 7, and in the
  // declared network mode an egress channel; collects.
  Outcome Feed(const RunSpec& spec, const std::string& skill_dir) {
    UniqueFd file(open("/etc/hostname", O_RDONLY | O_CLOEXEC));
    UniqueFd dir(open(skill_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    std::vector<int> fds = {file.get(), dir.get()};
    int channel[2] = {-1, -1};
    if (spec.egress_declared) {
      EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel), 0);
      fds.push_back(channel[1]);
    }
    UniqueFd broker_end(channel[0]), run_end(channel[1]);
    SendWith(spawned_->spec.get(), EncodeRunSpec(spec).value(), fds);
    run_end.reset();
    Outcome o = Collect(*spawned_);
    spawned_.reset();
    return o;
  }
  std::string Proc(const std::string& file) const {
    std::ifstream in("/proc/" + std::to_string(spawned_->pid) + "/" + file);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Whether the worker's mount table has a mount at `path` (of `type`, if given).
  bool Mounted(const std::string& path, const std::string& type = "") const {
    const std::string info = Proc("mountinfo");
    size_t at = 0;
    while ((at = info.find(" " + path + " ", at)) != std::string::npos) {
      const size_t eol = info.find('\n', at);
      const std::string rest = info.substr(at, eol - at);
      if (type.empty() || rest.find(" - " + type + " ") != std::string::npos) return true;
      at = eol;
    }
    return false;
  }
  // Polls `ok` for at most 5 s.
  static bool Eventually(const std::function<bool()>& ok) {
    for (int i = 0; i < 500; ++i) {
      if (ok()) return true;
      usleep(10000);
    }
    return false;
  }
  std::set<int> Fds() const {
    std::set<int> fds;
    DIR* d = opendir(("/proc/" + std::to_string(spawned_->pid) + "/fd").c_str());
    if (d == nullptr) return fds;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
    closedir(d);
    return fds;
  }
  std::string base_, root_;
  std::optional<Spawned> spawned_;
};

// While it waits: its own user namespace, the root and /tmp covered, 6 and 7 still free
// for the description's descriptors. Its run then passes the view (and fails at the exec
// of /etc/hostname, its "node").
TEST_F(ViewAhead, BuildsItsViewWhileItWaitsAndBindsTheSkillOnceNamed) {
  Start();
  ASSERT_TRUE(Eventually([&] { return Mounted(root_, "tmpfs"); })) << Proc("mountinfo");
  EXPECT_TRUE(Mounted("/tmp", "tmpfs"));
  char ours[64] = {}, its[64] = {};
  ASSERT_GT(readlink("/proc/self/ns/user", ours, sizeof ours - 1), 0);
  ASSERT_GT(readlink(("/proc/" + std::to_string(spawned_->pid) + "/ns/user").c_str(), its,
                     sizeof its - 1),
            0);
  EXPECT_STRNE(ours, its);
  const std::set<int> fds = Fds();
  EXPECT_EQ(fds.count(6) + fds.count(7), 0u) << "6 or 7 taken while it waits";
  EXPECT_FALSE(Mounted(root_ + "/skill")) << "bound before its run named it";
  Outcome o = Feed(Spec(), root_ + "/skill");
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kExec) << "errno " << o.report->err;
}

// The view hides exactly the cell's roots: a run asking for other roots is refused.
TEST_F(ViewAhead, ADescriptionWithOtherRootsIsRefused) {
  Start();
  RunSpec spec = Spec();
  spec.hidden_roots.push_back(base_ + "/mnt");
  Outcome o = Feed(spec, root_ + "/skill");
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EINVAL);
}

// The skill directory opened beneath the root's descriptor must be the broker's fd 7.
TEST_F(ViewAhead, ASkillDirectoryOtherThanTheBrokersIsRefused) {
  Start();
  Outcome o = Feed(Spec(), root_ + "/other");
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kMountView);
  EXPECT_EQ(o.report->err, ESTALE);
}

// A root renamed away while the worker waits (its cover moves with it) and another
// directory made at its path: the path no longer leads to the cover, so nothing is bound
// there (without the check, the skill's mount point would be made in the new directory).
TEST_F(ViewAhead, ARootNoLongerAtItsPathIsRefused) {
  Start();
  ASSERT_TRUE(Eventually([&] { return Mounted(root_, "tmpfs"); })) << Proc("mountinfo");
  const std::string moved = base_ + "/moved";
  ASSERT_EQ(rename(root_.c_str(), moved.c_str()), 0) << strerror(errno);
  ASSERT_EQ(mkdir(root_.c_str(), 0777), 0);
  ASSERT_EQ(chmod(root_.c_str(), 0777), 0);  // where the run's uid could make the mount point
  Outcome o = Feed(Spec(), moved + "/skill");
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kMountView);
  EXPECT_EQ(o.report->err, ESTALE);
}

// Until its run, the waiting worker's mounts stay slaves of the host's: a filesystem the
// host unmounts meanwhile leaves its copy too, so an idle connection keeps none busy.
TEST_F(ViewAhead, TheHostsUnmountReachesItWhileItWaits) {
  const std::string mnt = base_ + "/mnt";
  ASSERT_EQ(mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k"), 0) << strerror(errno);
  Start();
  ASSERT_TRUE(Eventually([&] { return Mounted(root_, "tmpfs"); })) << Proc("mountinfo");
  ASSERT_TRUE(Mounted(mnt)) << Proc("mountinfo");
  ASSERT_EQ(umount2(mnt.c_str(), 0), 0) << strerror(errno);
  EXPECT_TRUE(Eventually([&] { return !Mounted(mnt); })) << Proc("mountinfo");
}

// The declared network mode (CellSpec::network_ahead): the waiting worker has made its
// run's network namespace with the view, its resolver bound there and no listener yet
// (the rules' ports come with the run), 6 and 7 still free; its run then binds the rest
// and passes every step to the exec of its "node".
TEST_F(ViewAhead, MakesTheNetworkWhileItWaitsAndItsListenersOnceTheRunNamesThem) {
  CellSpec cell = Cell();
  cell.network_ahead = true;
  Start(cell);
  ASSERT_TRUE(Eventually([&] { return Mounted(root_, "tmpfs") && WaitsInRecvmsg(spawned_->pid); }))
      << Proc("syscall");
  const std::string its = NamespaceOf(spawned_->pid, "net");
  ASSERT_NE(its, "");
  EXPECT_NE(its, NamespaceOf(getpid(), "net")) << "no network of its own while it waits";
  const std::string udp = Proc("net/udp");  // the sockets of the worker's namespace
  EXPECT_NE(udp.find(":0035 "), std::string::npos) << "no resolver socket on port 53:\n" << udp;
  const std::string tcp = Proc("net/tcp");
  EXPECT_EQ(std::count(tcp.begin(), tcp.end(), '\n'), 1) << "a listener before its run:\n" << tcp;
  const std::set<int> fds = Fds();
  EXPECT_EQ(fds.count(6) + fds.count(7), 0u) << "6 or 7 taken while it waits";
  RunSpec spec = Spec();
  spec.egress_declared = true;
  spec.egress_rules = {{"api.example.com", {443, 8443}}};
  Outcome o = Feed(spec, root_ + "/skill");
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kExec) << "errno " << o.report->err;
}

// The positive control: a cell without it waits in the network it was started in.
TEST_F(ViewAhead, WithoutTheNetworkAheadItWaitsInItsParentsNetwork) {
  Start();
  ASSERT_TRUE(Eventually([&] { return Mounted(root_, "tmpfs") && WaitsInRecvmsg(spawned_->pid); }))
      << Proc("syscall");
  EXPECT_NE(NamespaceOf(spawned_->pid, "user"), NamespaceOf(getpid(), "user"));
  EXPECT_EQ(NamespaceOf(spawned_->pid, "net"), NamespaceOf(getpid(), "net"));
}

// What was made ahead is what the run asked for: a declared run after a view made
// without the network, and a run of another mode after one made with it, are refused.
TEST_F(ViewAhead, ARunOfAnotherNetworkModeThanTheCellsIsRefused) {
  for (const bool ahead : {false, true}) {
    SCOPED_TRACE(ahead ? "network ahead, run not declared" : "no network ahead, run declared");
    CellSpec cell = Cell();
    cell.network_ahead = ahead;
    Start(cell);
    RunSpec spec = Spec();
    spec.egress_declared = !ahead;
    Outcome o = Feed(spec, root_ + "/skill");
    ASSERT_TRUE(o.report.has_value());
    EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
    EXPECT_EQ(o.report->err, EINVAL);
  }
}

}  // namespace
}  // namespace skillmcp
