// The declared network mode through the real worker and real node: the test plays the
// broker on the run's egress channel and opens each connection the mirror asks for to an
// echo server of its own on the host's loopback. A declared name resolves to its allotted
// address and carries bytes both ways (the positive control: the channel, the resolver
// and the relay work); everything else is refused at once and the refusals reported. Both
// ways a worker is started ahead: under the shared run-as uid, where the run makes all of
// its network, and with the run's own uid, where the cell makes the namespace and the
// resolver's socket ahead (CellSpec::network_ahead) and the run the rest. The mirror runs
// under its own seccomp filter all along (seen in its /proc status, never inherited by
// node); one the kernel refuses fails its step before the script runs.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "broker/run/spawn.h"
#include "shared/egress_channel.h"
#include "shared/run_limits_default.h"
#include "shared/worker_protocol.h"
#include "tests/unit/run/started_worker.h"
#include "tests/unit/worker/test_util.h"

namespace skillmcp::testing {
namespace {

// Accepts on 127.0.0.1, answers each connection with what it read, upper-cased, once the
// client has finished writing.
class EchoServer {
 public:
  EchoServer() {
    fd_.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_.get(), reinterpret_cast<sockaddr*>(&at), sizeof at);
    listen(fd_.get(), 16);
    socklen_t len = sizeof at;
    getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&at), &len);
    port_ = ntohs(at.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int c = accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::string got;
        char buf[4096];
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
        for (char& ch : got) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        (void)!write(c, got.data(), got.size());
        close(c);
      }
    });
  }
  ~EchoServer() {
    shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

UniqueFd ConnectLoopback(uint16_t port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = htons(port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) return {};
  return fd;
}

void SendToMirror(int channel, const EgressToMirror& m, int fd) {
  const std::string frame = EncodeEgressToMirror(m).value();
  started_worker::SendWith(channel, frame, fd >= 0 ? std::vector<int>{fd} : std::vector<int>{});
}

constexpr char kScript[] = R"JS(
const dns = require('dns');
const net = require('net');
const { spawnSync } = require('child_process');
function attempt(host, port) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect({ host, port });
    let data = '';
    s.on('connect', () => s.end('ping ' + host));
    s.on('data', (d) => { data += d; });
    s.on('error', (e) => resolve({ error: e.code, ms: Date.now() - t0 }));
    s.on('close', () => resolve({ data, ms: Date.now() - t0 }));
  });
}
(async () => {
  const out = {};
  out.filters = require('fs').readFileSync('/proc/self/status', 'utf8').match(/Seccomp_filters:\s*(\d+)/)[1];
  out.lookup = await new Promise((r) => dns.lookup('API.example.com', { family: 4 }, (e, a) => r(e ? e.code : a)));
  out.declared = await attempt('api.example.com', 443);
  out.again = await attempt('api.example.com', 443);
  out.wildcard = await attempt('x.svc.test', 8443);
  out.undeclared = await attempt('evil.example.org', 443);
  out.literal = await attempt('203.0.113.9', 443);
  out.otherPort = await attempt('api.example.com', 8443);
  out.closedPort = await attempt('api.example.com', 22);
  const child = spawnSync(process.execPath, ['-e', `
    const s = require('net').connect(443, 'api.example.com');
    let d = ''; s.on('connect', () => s.end('child')); s.on('data', (x) => d += x);
    s.on('close', () => process.stdout.write(d)); s.on('error', (e) => process.stdout.write(e.code));`]);
  out.child = String(child.stdout);
  console.log(JSON.stringify(out));
})();
)JS";

// GetParam(): whether the cell is the one a whole description implies (CellOf: ids, view
// and network ahead), else the shared run-as uid's (nothing ahead but the switch's flag).
// "Key:\tvalue" of /proc/<pid>/status.
std::map<std::string, std::string> StatusOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::stringstream text;
  text << in.rdbuf();
  return KeyValues(text.str());
}

class EgressWorkerTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the worker tests switch uids and need root";
    if (access(kNode, X_OK) != 0) GTEST_SKIP() << "no node at " << kNode;
    mkdir(skill_.Sub("scripts").c_str(), 0755);
    WriteFile(skill_.Sub("scripts/net.js"), kScript);
    spec_.script_path = skill_.Sub("scripts/net.js");
    spec_.envp = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"};
    spec_.switch_ids = true;
    spec_.uid = spec_.gid = 65534;
    spec_.limits = kDefaultRunLimits;
    spec_.namespaces = true;
    spec_.skill_dir_path = skill_.path();
    spec_.fresh_proc = true;
    spec_.egress_declared = true;
    spec_.egress_rules = {{"api.example.com", {443}}, {"*.svc.test", {8443}}};
    SetSeccomp(spec_, true);  // the mirror's filter with it
  }

  // The worker started as the pool starts it, told its cell and then `spec_`, with the
  // worker's end of the egress channel; `broker_end_` is the test's.
  Spawned Start() {
    int ch[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch), 0);
    broker_end_.reset(ch[0]);
    UniqueFd worker_end(ch[1]);
    UniqueFd worker(open(SKILL_MCP_TEST_WORKER, O_RDONLY | O_CLOEXEC));
    UniqueFd node(open(kNode, O_RDONLY | O_CLOEXEC));
    UniqueFd script(open(spec_.script_path.c_str(), O_RDONLY | O_CLOEXEC));
    UniqueFd dir(open(skill_.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    SpawnRequest req;
    req.worker_fd = worker.get();
    req.node_fd = node.get();
    req.spec_socket = true;
    SpawnOutcome s = SpawnWorker(req);
    EXPECT_TRUE(s.spawned.has_value());
    if (!s.spawned) return {};
    Spawned w = std::move(*s.spawned);
    CellSpec cell;
    cell.switch_ids = true;
    if (GetParam()) {
      cell = CellOf(spec_);
      EXPECT_TRUE(cell.network_ahead);
    }
    started_worker::SendWith(w.spec.get(), EncodeCellSpec(cell).value(), {});
    started_worker::SendWith(w.spec.get(), EncodeRunSpec(spec_).value(),
                             {script.get(), dir.get(), worker_end.get()});
    w.spec.reset();
    return w;
  }

  TempDir skill_;
  RunSpec spec_;
  UniqueFd broker_end_;
};

TEST_P(EgressWorkerTest, DeclaredHostsAreReachedThroughTheBrokerAndNothingElseIs) {
  EchoServer echo;
  Spawned w = Start();
  ASSERT_GT(w.pid, 0);
  const int broker_end = broker_end_.get();

  // The broker's side: answer every request, collect every report, read the output.
  std::vector<EgressConnect> asked;
  std::vector<EgressRefused> refused;
  std::vector<EgressClosed> closed;
  std::map<std::string, std::string> mirror;  // its status while it serves the run
  std::string out, err;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd p[3] = {{broker_end, POLLIN, 0}, {w.out.get(), POLLIN, 0}, {w.err.get(), POLLIN, 0}};
    if (!out_open) p[1].fd = -1;
    if (!err_open) p[2].fd = -1;
    ASSERT_GT(poll(p, 3, 30000), 0) << "the run hung; stdout so far: " << out;
    char buf[4096];
    if (p[0].revents & POLLIN) {
      ssize_t n = recv(broker_end, buf, sizeof buf, 0);
      if (n > 0) {
        auto m = DecodeEgressFromMirror(std::string_view(buf, static_cast<size_t>(n)));
        ASSERT_TRUE(m.has_value());
        if (auto* c = std::get_if<EgressConnect>(&*m)) {
          if (asked.empty()) mirror = StatusOf(w.pid);
          asked.push_back(*c);
          UniqueFd up = ConnectLoopback(echo.port());
          ASSERT_TRUE(up.valid());
          SendToMirror(broker_end, EgressOpened{c->id}, up.get());
        } else if (auto* r = std::get_if<EgressRefused>(&*m)) {
          refused.push_back(*r);
        } else {
          closed.push_back(std::get<EgressClosed>(*m));
        }
      }
    }
    for (int i = 1; i <= 2; ++i) {
      if (p[i].revents == 0) continue;
      ssize_t n = read(p[i].fd, buf, sizeof buf);
      if (n <= 0)
        (i == 1 ? out_open : err_open) = false;
      else
        (i == 1 ? out : err).append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  waitpid(w.pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << err;

  const auto j = nlohmann::json::parse(out);
  // The mirror (the worker itself) filters itself, once; node has its own filter only.
  EXPECT_EQ(mirror["Seccomp"], "2") << "the mirror serves the run without a filter";
  EXPECT_EQ(mirror["Seccomp_filters"], "1");
  EXPECT_EQ(j["filters"], "1") << "node inherited the mirror's filter";
  EXPECT_EQ(j["lookup"], "127.77.0.1");
  EXPECT_EQ(j["declared"]["data"], "PING API.EXAMPLE.COM");
  EXPECT_EQ(j["again"]["data"], "PING API.EXAMPLE.COM");
  EXPECT_EQ(j["wildcard"]["data"], "PING X.SVC.TEST");
  EXPECT_EQ(j["child"], "CHILD") << "a child process is held to the same list";
  EXPECT_EQ(j["undeclared"]["error"], "ENOTFOUND");
  // An address literal has no route out of the namespace (or the tun route refuses it).
  EXPECT_TRUE(j["literal"]["error"] == "ENETUNREACH" || j["literal"]["error"] == "ECONNREFUSED")
      << j["literal"];
  // An allotted address on a port its name does not allow: accepted, then reset.
  EXPECT_TRUE(j["otherPort"].contains("error") || j["otherPort"]["data"] == "") << j["otherPort"];
  EXPECT_EQ(j["closedPort"]["error"], "ECONNREFUSED");
  for (const char* k : {"undeclared", "literal", "otherPort", "closedPort"})
    EXPECT_LT(j[k]["ms"].get<int>(), 1000) << k << " was not refused at once";

  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[0], (EgressConnect{asked[0].id, "api.example.com", 443}));
  EXPECT_EQ(asked[2].host, "x.svc.test");
  EXPECT_EQ(asked[2].port, 8443);
  EXPECT_EQ(asked[3].host, "api.example.com");  // the child's
  bool refused_name = false, refused_port = false;
  for (const EgressRefused& r : refused) {
    refused_name |= r == EgressRefused{"dns", "evil.example.org", 0};
    refused_port |= r == EgressRefused{"tcp", "api.example.com", 8443};
  }
  EXPECT_TRUE(refused_name);
  EXPECT_TRUE(refused_port);
  ASSERT_EQ(closed.size(), 4u);
  EXPECT_EQ(closed[0].bytes_out, std::string("ping api.example.com").size());
  EXPECT_EQ(closed[0].bytes_in, std::string("PING API.EXAMPLE.COM").size());
}

// A mirror filter the kernel refuses fails its own step, reported, and the script never
// runs: the mirror kills the run before it serves anything.
TEST_P(EgressWorkerTest, AMirrorFilterTheKernelRefusesFailsItsStepBeforeTheScriptRuns) {
  spec_.mirror_bpf = std::string(16, '\xff');  // two records of an undefined opcode
  Spawned w = Start();
  ASSERT_GT(w.pid, 0);
  broker_end_.reset();  // a run that did start is refused every host and ends
  std::string report, out;
  char buf[256];
  ssize_t n;
  while ((n = read(w.report.get(), buf, sizeof buf)) > 0)
    report.append(buf, static_cast<size_t>(n));
  while ((n = read(w.out.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int status = 0;
  waitpid(w.pid, &status, 0);
  const std::optional<WorkerFrames> frames = DecodeWorkerFrames(report);
  ASSERT_TRUE(frames && frames->report) << report.size() << " bytes of report, status " << status;
  EXPECT_EQ(frames->report->step, WorkerStep::kMirrorSeccomp);
  EXPECT_EQ(frames->report->err, EINVAL);
  EXPECT_FALSE(frames->exit.has_value()) << "node ran to its end";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 229) << status;
  EXPECT_EQ(out, "") << "the script ran";
}

INSTANTIATE_TEST_SUITE_P(Cells, EgressWorkerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "NetworkAhead" : "NothingAhead";
                         });

}  // namespace
}  // namespace skillmcp::testing
