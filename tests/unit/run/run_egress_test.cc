// A run's egress on the broker's side (broker/run/run_egress.h) with the real egress
// helper (the built skill-mcp-egress, started as a broker starts it) and the broker's own
// event loop. The test plays the run's mirror on the other end of the channel and the
// declared host with an echo server on 127.0.0.1.
#include "broker/run/run_egress.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "broker/loop/event_loop.h"
#include "broker/run/egress_client.h"
#include "shared/egress_channel.h"
#include "shared/fd_packet.h"

namespace skillmcp {
namespace {

// The helper on one end of a socketpair, as the broker starts it in stdio mode.
struct StartedHelper {
  pid_t pid = -1;
  UniqueFd ours;
  StartedHelper() {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    ours.reset(sv[0]);
    pid = fork();
    if (pid == 0) {
      if (dup2(sv[1], 10) != 10) _exit(120);
      char* argv[] = {const_cast<char*>(SKILL_MCP_TEST_EGRESS), const_cast<char*>("--connection-fd"),
                      const_cast<char*>("10"), nullptr};
      char* envp[] = {nullptr};
      execve(argv[0], argv, envp);
      _exit(121);
    }
    close(sv[1]);
  }
  ~StartedHelper() {
    ours.reset();
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Echoes what it reads, upper-cased, once the client has finished writing; one
// connection at a time, in a child process.
struct EchoHost {
  pid_t pid = -1;
  uint16_t port = 0;
  EchoHost() {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    listen(fd.get(), 16);
    socklen_t len = sizeof sa;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    pid = fork();
    if (pid == 0) {
      for (;;) {
        int c = accept(fd.get(), nullptr, nullptr);
        if (c < 0) _exit(0);
        std::string got;
        char buf[4096];
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
        for (char& ch : got) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
        (void)!write(c, got.data(), got.size());
        close(c);
      }
    }
  }
  ~EchoHost() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

EgressSettings Local(bool allow_local) {
  EgressSettings s;
  s.allow_local = allow_local;
  return s;
}

class RunEgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    mirror_.reset(sv[0]);
    broker_end_.reset(sv[1]);
  }

  void Ask(uint32_t id, const std::string& host, uint16_t port) {
    ASSERT_EQ(SendFdPacket(mirror_.get(), EncodeEgressFromMirror(EgressConnect{id, host, port}).value(), -1), 0);
  }

  // `count` refusals of different names, as the mirror reports them.
  void Refusals(int count) {
    for (int i = 0; i < count; ++i) {
      const EgressRefused r{"dns", "n" + std::to_string(i) + ".test", 0};
      ASSERT_EQ(SendFdPacket(mirror_.get(), EncodeEgressFromMirror(r).value(), -1), 0);
    }
  }

  // The loop turns until the mirror has an answer; the answer and its socket.
  std::optional<EgressToMirror> Answer(UniqueFd& socket) {
    for (int i = 0; i < 500; ++i) {
      loop_.RunOnce(10);
      char buf[kEgressFrameMaxBytes + 1];
      FdPacket p = ReceiveFdPacket(mirror_.get(), buf, sizeof buf);
      if (p.status != FdPacket::Status::kMessage) continue;
      socket = std::move(p.fd);
      return DecodeEgressToMirror(std::string_view(buf, p.size));
    }
    return std::nullopt;
  }

  EventLoop loop_;
  UniqueFd mirror_, broker_end_;
};

TEST_F(RunEgressTest, APinnedNameIsDialledAtItsAddressAndCountedUnderItsName) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  EgressSettings settings = Local(true);
  settings.pins = {{"api.example.test", "127.0.0.1"}};
  RunEgress egress(loop_, &client, {{"api.example.test", {host.port}}}, settings,
                   std::move(broker_end_));
  Ask(1, "api.example.test", host.port);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  // The name has no address anywhere: only the pin can have opened it.
  ASSERT_TRUE(std::holds_alternative<EgressOpened>(*a)) << std::get<EgressDenied>(*a).err;
  ASSERT_TRUE(socket.valid());
  ASSERT_EQ(egress.summary().hosts.size(), 1u);
  EXPECT_EQ(egress.summary().hosts[0].host, "api.example.test");
}

TEST_F(RunEgressTest, AWildcardReachesNoNameUnderAPublicSuffixBelowIt) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  EgressSettings settings = Local(true);
  // Both pinned to the echo host: only the rule can tell them apart.
  settings.pins = {{"api.amazonaws.com", "127.0.0.1"}, {"bucket.s3.amazonaws.com", "127.0.0.1"}};
  RunEgress egress(loop_, &client, {{"*.amazonaws.com", {host.port}}}, settings,
                   std::move(broker_end_));
  // Control: a name of amazonaws.com's own is opened.
  Ask(1, "api.amazonaws.com", host.port);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressOpened>(*a)) << std::get<EgressDenied>(*a).err;
  // s3.amazonaws.com is a public suffix: a bucket under it is anyone's.
  Ask(2, "bucket.s3.amazonaws.com", host.port);
  UniqueFd refused;
  a = Answer(refused);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressDenied>(*a));
  EXPECT_EQ(std::get<EgressDenied>(*a).err, EACCES);
  EXPECT_FALSE(refused.valid());
  ASSERT_EQ(egress.summary().refused.size(), 1u);
  EXPECT_EQ(egress.summary().refused[0].kind, "policy");
  EXPECT_NE(egress.summary().refused[0].reason.find("under s3.amazonaws.com"), std::string::npos)
      << egress.summary().refused[0].reason;
}

TEST_F(RunEgressTest, AWildcardTheOperatorNamesReachesUnderAPublicSuffixToo) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  EgressSettings settings = Local(true);
  settings.pins = {{"bucket.s3.amazonaws.com", "127.0.0.1"}};
  settings.patterns = std::vector<EgressPattern>{{"*.amazonaws.com", host.port}};
  RunEgress egress(loop_, &client, {{"*.amazonaws.com", {host.port}}}, settings,
                   std::move(broker_end_));
  Ask(1, "bucket.s3.amazonaws.com", host.port);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressOpened>(*a)) << std::get<EgressDenied>(*a).err;
  EXPECT_TRUE(egress.summary().refused.empty());
}

TEST_F(RunEgressTest, AnUnpinnedNameWithoutAnAddressIsRefused) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  RunEgress egress(loop_, &client, {{"api.example.test", {host.port}}}, Local(true),
                   std::move(broker_end_));
  Ask(1, "api.example.test", host.port);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressDenied>(*a));
  EXPECT_FALSE(socket.valid());
  ASSERT_EQ(egress.summary().refused.size(), 1u);
  EXPECT_EQ(egress.summary().refused[0].kind, "connect");
}

TEST_F(RunEgressTest, ADeclaredHostIsOpenedByTheHelperAndCounted) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  // Pinned: the helper looks names up absolute ("localhost."), which /etc/hosts does not
  // answer.
  EgressSettings settings = Local(true);
  settings.pins = {{"localhost", "127.0.0.1"}};
  RunEgress egress(loop_, &client, {{"localhost", {host.port}}}, settings,
                   std::move(broker_end_));
  Ask(1, "localhost", host.port);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressOpened>(*a)) << std::get<EgressDenied>(*a).err;
  ASSERT_TRUE(socket.valid());
  // The socket is the connection: the bytes reach the host and come back.
  int flags = fcntl(socket.get(), F_GETFL);
  fcntl(socket.get(), F_SETFL, flags & ~O_NONBLOCK);
  ASSERT_EQ(write(socket.get(), "hello", 5), 5);
  shutdown(socket.get(), SHUT_WR);
  char buf[16] = {};
  ASSERT_EQ(read(socket.get(), buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "HELLO");
  ASSERT_EQ(SendFdPacket(mirror_.get(), EncodeEgressFromMirror(EgressClosed{1, 5, 5}).value(), -1), 0);
  loop_.RunOnce(10);
  ASSERT_EQ(egress.summary().hosts.size(), 1u);
  EXPECT_EQ(egress.summary().hosts[0], (EgressSummary::Host{"localhost", host.port, 1, 5, 5}));
  EXPECT_TRUE(egress.summary().refused.empty());
}

TEST_F(RunEgressTest, ANameOrPortOutsideTheRulesIsDeniedWithoutAskingTheHelper) {
  StartedHelper helper;
  EgressClient client(loop_, std::move(helper.ours));
  RunEgress egress(loop_, &client, {{"api.example.com", {443}}}, Local(false), std::move(broker_end_));
  for (auto [host, port] : std::vector<std::pair<std::string, uint16_t>>{
           {"evil.example.com", 443}, {"api.example.com", 22}}) {
    Ask(7, host, port);
    UniqueFd socket;
    std::optional<EgressToMirror> a = Answer(socket);
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(std::holds_alternative<EgressDenied>(*a));
    EXPECT_EQ(std::get<EgressDenied>(*a).err, EACCES);
    EXPECT_FALSE(socket.valid());
  }
  ASSERT_EQ(egress.summary().refused.size(), 2u);
  EXPECT_EQ(egress.summary().refused[0].kind, "policy");
  EXPECT_EQ(egress.summary().refused[1].port, 22);
}

TEST_F(RunEgressTest, ALocalAddressIsRefusedByTheHelperUnlessAllowed) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  // why: a declared name that leads to the broker's own host is DNS rebinding (pinned
  // here; tests/unit/egress/helper_resolver_test.cc has one resolved by DNS).
  EgressSettings settings = Local(false);
  settings.pins = {{"localhost", "127.0.0.1"}};
  RunEgress egress(loop_, &client, {{"localhost", {host.port}}}, settings,
                   std::move(broker_end_));
  Ask(2, "localhost", host.port);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressDenied>(*a));
  EXPECT_EQ(std::get<EgressDenied>(*a).err, EACCES);
  ASSERT_EQ(egress.summary().refused.size(), 1u);
  EXPECT_EQ(egress.summary().refused[0].kind, "connect");
}

TEST_F(RunEgressTest, WithoutAHelperEveryRequestIsRefused) {
  RunEgress egress(loop_, nullptr, {{"localhost", {443}}}, Local(true), std::move(broker_end_));
  Ask(3, "localhost", 443);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(std::get<EgressDenied>(*a).err, EHOSTUNREACH);
}

TEST_F(RunEgressTest, AHelperThatDiesFailsWhatItHeldAndTheRunGoesOn) {
  auto helper = std::make_unique<StartedHelper>();
  EgressClient client(loop_, std::move(helper->ours));
  helper.reset();  // killed and reaped: the client's socket reads EOF
  RunEgress egress(loop_, &client, {{"localhost", {443}}}, Local(true), std::move(broker_end_));
  Ask(4, "localhost", 443);
  UniqueFd socket;
  std::optional<EgressToMirror> a = Answer(socket);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(std::holds_alternative<EgressDenied>(*a));
  EXPECT_EQ(std::get<EgressDenied>(*a).err, EHOSTUNREACH);
}

TEST_F(RunEgressTest, ReportsAreBoundedAndCounted) {
  RunEgress egress(loop_, nullptr, {}, Local(false), std::move(broker_end_));
  Refusals(40);
  egress.Drain();
  EXPECT_EQ(egress.summary().refused.size(), kEgressSummaryMaxEntries);
  EXPECT_EQ(egress.summary().refused_omitted, 40u - kEgressSummaryMaxEntries);
}

TEST_F(RunEgressTest, HostsPastTheListAreCountedTogetherWithTheirBytes) {
  StartedHelper helper;
  EchoHost host;
  EgressClient client(loop_, std::move(helper.ours));
  EgressSettings settings = Local(true);
  std::vector<EgressRule> rules;
  const size_t names = kEgressSummaryMaxEntries + 2;
  for (size_t i = 0; i < names; ++i) {
    const std::string name = "h" + std::to_string(i) + ".example.test";
    settings.pins.push_back({name, "127.0.0.1"});
    rules.push_back({name, {host.port}});
  }
  RunEgress egress(loop_, &client, rules, settings, std::move(broker_end_));
  // Each host once, the first past the list twice: every connection is opened and its
  // bytes reported, as the mirror would.
  std::vector<size_t> order;
  for (size_t i = 0; i < names; ++i) order.push_back(i);
  order.push_back(kEgressSummaryMaxEntries);
  uint32_t id = 0;
  for (size_t i : order) {
    ++id;
    Ask(id, "h" + std::to_string(i) + ".example.test", host.port);
    UniqueFd socket;
    std::optional<EgressToMirror> a = Answer(socket);
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(std::holds_alternative<EgressOpened>(*a)) << i;
    ASSERT_EQ(SendFdPacket(mirror_.get(),
                           EncodeEgressFromMirror(EgressClosed{id, 1000 + i, 10}).value(), -1),
              0);
  }
  egress.Drain();
  const EgressSummary& s = egress.summary();
  ASSERT_EQ(s.hosts.size(), kEgressSummaryMaxEntries);
  EXPECT_EQ(s.hosts.back().host,
            "h" + std::to_string(kEgressSummaryMaxEntries - 1) + ".example.test");
  const uint64_t past = kEgressSummaryMaxEntries;
  EXPECT_EQ(s.hosts_omitted,
            (EgressSummary::Omitted{2, 3, (1000 + past) * 2 + (1000 + past + 1), 30}));
  EXPECT_TRUE(s.refused.empty());
}

TEST_F(RunEgressTest, TheMirrorsCloseComesAfterEveryReportItSentIsRead) {
  RunEgress egress(loop_, nullptr, {}, Local(false), std::move(broker_end_));
  size_t seen_at_close = 0;
  bool closed = false;
  egress.WhenClosed([&] {
    closed = true;
    seen_at_close = egress.summary().refused.size() + egress.summary().refused_omitted;
  });
  // More than one wake reads, and the count of refusals the mirror did not detail.
  Refusals(150);
  ASSERT_EQ(
      SendFdPacket(mirror_.get(), EncodeEgressFromMirror(EgressRefusedUntold{500}).value(), -1), 0);
  mirror_.reset();
  for (int i = 0; i < 100 && !closed; ++i) loop_.RunOnce(10);
  ASSERT_TRUE(closed);
  EXPECT_FALSE(egress.open());
  EXPECT_EQ(seen_at_close, 650u);
  EXPECT_EQ(egress.summary().refused_omitted, 650u - kEgressSummaryMaxEntries);
}

TEST_F(RunEgressTest, TheFinalDrainReadsEverythingThatCame) {
  RunEgress egress(loop_, nullptr, {}, Local(false), std::move(broker_end_));
  Refusals(150);
  egress.Drain();
  EXPECT_EQ(egress.summary().refused_omitted, 150u - kEgressSummaryMaxEntries);
  EXPECT_TRUE(egress.open()) << "the mirror's end is still open";
}

}  // namespace
}  // namespace skillmcp
