// The built helper end to end: what it connects, what it refuses, and how it answers.
#include <netdb.h>

#include "tests/unit/egress/helper_rig.h"

namespace skillmcp::egress_test {
namespace {

// Bytes both ways through a connection the helper opened: the socket is the real one.
void ExpectTalks(int through, LocalPort& host) {
  UniqueFd served = host.Accept();
  ASSERT_TRUE(served.valid()) << "the host saw no connection";
  ASSERT_EQ(send(through, "ping", 4, MSG_NOSIGNAL), 4);
  char buf[8] = {};
  ASSERT_TRUE(WaitReadable(served.get(), 5000));
  ASSERT_EQ(recv(served.get(), buf, sizeof buf, 0), 4);
  EXPECT_EQ(std::string(buf, 4), "ping");
  ASSERT_EQ(send(served.get(), "pong", 4, MSG_NOSIGNAL), 4);
  ASSERT_TRUE(WaitReadable(through, 5000));
  ASSERT_EQ(recv(through, buf, sizeof buf, 0), 4);
  EXPECT_EQ(std::string(buf, 4), "pong");
}

void ExpectRefused(Got& got, uint32_t id, int error) {
  ASSERT_FALSE(got.timed_out);
  ASSERT_TRUE(got.answer.has_value()) << "not an answer";
  EXPECT_EQ(got.answer->id, id);
  EXPECT_EQ(got.answer->error, error) << strerror(got.answer->error);
  EXPECT_FALSE(got.fd.valid());
}

bool HaveIpv6() {
  UniqueFd s(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return s.valid();
}

TEST(EgressHelperTest, ConnectsALocalHostWhenAllowedAndHandsOverAWorkingSocket) {
  LocalPort host = LocalPort::Open(true);
  auto helper = Helper::Connected();
  helper->broker().Ask(To(7, "127.0.0.1", host.port, true));
  Got got = helper->broker().Receive();
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->id, 7u);
  ASSERT_EQ(got.answer->error, 0) << strerror(got.answer->error);
  EXPECT_EQ(got.answer->family, AF_INET);
  EXPECT_EQ(AddressText(*got.answer), "127.0.0.1");
  EXPECT_EQ(got.answer->port, host.port);
  ASSERT_TRUE(got.fd.valid());
  ExpectTalks(got.fd.get(), host);
}

TEST(EgressHelperTest, ALocalAddressIsRefusedWithoutTheFlagAndNothingConnects) {
  LocalPort host = LocalPort::Open(true);
  auto helper = Helper::Connected();
  helper->broker().Ask(To(8, "127.0.0.1", host.port, false));
  Got got = helper->broker().Receive();
  ExpectRefused(got, 8, EACCES);
  EXPECT_EQ(AddressText(*got.answer), "127.0.0.1") << "the refused address is named";
  EXPECT_EQ(got.answer->port, host.port);
  EXPECT_FALSE(host.Accept(200).valid()) << "the host saw a connection";
}

TEST(EgressHelperTest, AMappedAddressIsWhatItCarries) {
  if (!HaveIpv6()) GTEST_SKIP() << "no IPv6 sockets here";
  LocalPort host = LocalPort::Open(true);
  auto helper = Helper::Connected();
  helper->broker().Ask(To(1, "::ffff:127.0.0.1", host.port, false));
  Got refused = helper->broker().Receive();
  ExpectRefused(refused, 1, EACCES);
  EXPECT_FALSE(host.Accept(200).valid());
  // Positive control: the same address, allowed, reaches the IPv4 host.
  helper->broker().Ask(To(2, "::ffff:127.0.0.1", host.port, true));
  Got got = helper->broker().Receive();
  ASSERT_TRUE(got.answer.has_value());
  ASSERT_EQ(got.answer->error, 0) << strerror(got.answer->error);
  EXPECT_EQ(got.answer->family, AF_INET6);
  ExpectTalks(got.fd.get(), host);
}

// Refused before any connect, so no packet leaves for them (address_class.cc has the why).
TEST(EgressHelperTest, CloudMetadataAndTheProvidersRangesAreRefused) {
  auto helper = Helper::Connected();
  uint32_t id = 1;
  for (const char* target : {"168.63.129.16", "100.100.100.200", "100.64.0.1", "192.0.0.192",
                             "169.254.169.254", "fd00:ec2::254", "fd20:ce::254"}) {
    if (std::strchr(target, ':') != nullptr && !HaveIpv6()) continue;
    helper->broker().Ask(To(id, target, 80, false));
    Got got = helper->broker().Receive(1000);
    ExpectRefused(got, id++, EACCES);
    EXPECT_EQ(AddressText(*got.answer), target);
  }
}

TEST(EgressHelperTest, ANameThatDoesNotResolveIsAnsweredAsFastAsTheResolverSaysSo) {
  // The host's own resolver, timed, is the yardstick: the helper adds nothing to it.
  addrinfo hints{}, *list = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  const int64_t t0 = NowMs();
  const int direct = getaddrinfo("nonexistent.invalid", "443", &hints, &list);
  const int64_t direct_ms = NowMs() - t0;
  ASSERT_NE(direct, 0) << ".invalid never resolves";
  auto helper = Helper::Connected();
  const int64_t t1 = NowMs();
  helper->broker().Ask(To(5, "nonexistent.invalid", 443, true));
  Got got = helper->broker().Receive(direct_ms + 10000);
  const int64_t helper_ms = NowMs() - t1;
  ExpectRefused(got, 5, direct == EAI_NONAME ? ENOENT : EIO);
  EXPECT_EQ(got.answer->family, 0) << "no address was tried";
  EXPECT_LT(helper_ms, direct_ms + 2000);
}

TEST(EgressHelperTest, AClosedPortIsConnectionRefused) {
  LocalPort closed = LocalPort::Open(false);  // bound, not listening: nobody else takes it
  auto helper = Helper::Connected();
  helper->broker().Ask(To(6, "127.0.0.1", closed.port, true));
  Got got = helper->broker().Receive();
  ExpectRefused(got, 6, ECONNREFUSED);
  EXPECT_EQ(AddressText(*got.answer), "127.0.0.1");
}

TEST(EgressHelperTest, AnswersCarryTheirRequestsIdsInAnyOrder) {
  LocalPort host = LocalPort::Open(true);
  LocalPort closed = LocalPort::Open(false);
  auto helper = Helper::Connected();
  helper->broker().Ask(To(100, "nonexistent.invalid", 443, true));
  helper->broker().Ask(To(101, "127.0.0.1", closed.port, true));
  helper->broker().Ask(To(102, "127.0.0.1", host.port, true));
  std::map<uint32_t, int> errors;
  for (int i = 0; i < 3; ++i) {
    Got got = helper->broker().Receive();
    ASSERT_TRUE(got.answer.has_value());
    errors[got.answer->id] = got.answer->error;
  }
  EXPECT_NE(errors.at(100), 0);
  EXPECT_EQ(errors.at(101), ECONNREFUSED);
  EXPECT_EQ(errors.at(102), 0);
}

TEST(EgressHelperTest, ItExitsWhenItsBrokerCloses) {
  auto helper = Helper::Connected();
  helper->CloseBroker();
  const int status = helper->WaitExit(5000);
  ASSERT_NE(status, -1) << "still running";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(EgressHelperTest, ItClosesWhatItInheritedAndGainsNoPrivilege) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  UniqueFd r(p[0]);
  LocalPort closed = LocalPort::Open(false);
  std::unique_ptr<Helper> helper;
  {
    UniqueFd w(p[1]);
    helper = Helper::Connected({}, w.get());
  }
  // Once it answers, it has taken its start steps.
  helper->broker().Ask(To(1, "127.0.0.1", closed.port, true));
  Got got = helper->broker().Receive();
  ASSERT_TRUE(got.answer.has_value());
  ASSERT_TRUE(WaitReadable(r.get(), 1000));
  char c = 0;
  EXPECT_EQ(read(r.get(), &c, 1), 0) << "the helper still holds the pipe it inherited";
  const std::string status_path = "/proc/" + std::to_string(helper->pid()) + "/status";
  FILE* f = fopen(status_path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[256];
  std::string no_new_privs;
  while (fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "NoNewPrivs:", 11) == 0) no_new_privs = line;
  fclose(f);
  EXPECT_EQ(no_new_privs, "NoNewPrivs:\t1\n");
}

TEST(EgressHelperTest, ItRefusesToStartWithoutAUsableSocket) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  UniqueFd r(p[0]), w(p[1]);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd s0(sv[0]), s1(sv[1]);
  struct Case {
    const char* why;
    std::vector<std::string> args;
    int fd;
    bool listen;
  };
  const Case cases[] = {
      {"a pipe", {"--connection-fd", "10"}, r.get(), false},
      {"a stream socket", {"--connection-fd", "10"}, s0.get(), false},
      {"nothing at all", {}, r.get(), false},
      {"a pipe as the activation socket", {}, r.get(), true},
      {"an unknown option", {"--connection-fd", "10", "--fast"}, s0.get(), false},
  };
  for (const Case& c : cases) {
    pid_t pid = Helper::SpawnRaw(c.args, c.fd, c.listen);
    const int status = Helper::WaitPid(pid, 5000);
    ASSERT_NE(status, -1) << c.why << ": still running";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << c.why << ": " << status;
  }
}

}  // namespace
}  // namespace skillmcp::egress_test
