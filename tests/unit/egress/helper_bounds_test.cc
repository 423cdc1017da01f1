// The built helper under load and abuse: the in-flight bounds and the request deadline,
// malformed requests, a broker that stops reading, and socket activation with more than
// one broker.
#include <set>

#include "tests/unit/egress/helper_rig.h"

namespace skillmcp::egress_test {
namespace {

constexpr size_t kInFlight = 64;       // egress/server.h, kMaxInFlight
constexpr size_t kPerBroker = 16;      // egress/server.h, kMaxInFlightPerBroker
constexpr int64_t kStalledMs = 10000;  // egress/server.h, kStalledBrokerMs
constexpr size_t kBrokers = 64;        // egress/server.h, kMaxBrokers

// A listener whose accept queue is full: the kernel drops further SYNs, so a connection
// to it stays in progress until the connecting side gives up. `held` keeps the
// connections that filled it.
LocalPort FullListener(std::vector<UniqueFd>& held) {
  LocalPort host = LocalPort::Open(true, /*backlog=*/0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(host.port);
  for (int i = 0; i < 16; ++i) {
    UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    connect(c.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    pollfd p{c.get(), POLLOUT, 0};
    const bool connected = poll(&p, 1, 300) == 1;
    held.push_back(std::move(c));
    if (!connected) return host;  // this one is stuck: the queue is full
  }
  ADD_FAILURE() << "the listener's queue never filled";
  return host;
}

// Sends `count` requests to the stuck listener from `b`, ids from `first`.
void AskStuck(BrokerEnd& b, const LocalPort& stuck, uint32_t first, size_t count) {
  for (uint32_t id = first; id < first + count; ++id) b.Ask(To(id, "127.0.0.1", stuck.port, true));
}

// An answer that came at once (before any stuck request could time out).
void ExpectAtOnce(BrokerEnd& b, uint32_t id, int error, int64_t since) {
  Got got = b.Receive(1000);
  ASSERT_FALSE(got.timed_out) << "no answer for " << id;
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->id, id);
  EXPECT_EQ(got.answer->error, error) << strerror(got.answer->error);
  EXPECT_LT(NowMs() - since, 1000);
}

// The stuck requests end at their connect timeout, each named once.
void ExpectTimedOut(BrokerEnd& b, uint32_t first, size_t count) {
  std::set<uint32_t> ids;
  for (size_t i = 0; i < count; ++i) {
    Got got = b.Receive(10000);
    ASSERT_TRUE(got.answer.has_value()) << i;
    EXPECT_EQ(got.answer->error, ETIMEDOUT) << strerror(got.answer->error);
    ids.insert(got.answer->id);
  }
  EXPECT_EQ(ids.size(), count);
  EXPECT_EQ(*ids.begin(), first);
}

// A broker whose hosts never answer (a blackhole: a local listener whose accept queue is
// full) fills its own share; the next broker of the same helper is served at once.
TEST(EgressBoundsTest, OneBrokerOverItsShareIsAnsweredEagainAndTheOthersAreServed) {
  const std::string path = "/tmp/skill-mcp-egress-test-f" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  std::vector<UniqueFd> held;
  LocalPort stuck = FullListener(held);
  LocalPort host = LocalPort::Open(true);
  auto helper = Helper::Activated(path, {"--connect-timeout-ms", "1500"});
  BrokerEnd greedy = helper->Connect();
  BrokerEnd other = helper->Connect();
  AskStuck(greedy, stuck, 1, kPerBroker);
  const int64_t t0 = NowMs();
  greedy.Ask(To(kPerBroker + 1, "127.0.0.1", stuck.port, true));
  ExpectAtOnce(greedy, kPerBroker + 1, EAGAIN, t0);
  other.Ask(To(500, "127.0.0.1", host.port, true));
  ExpectAtOnce(other, 500, 0, t0);
  ExpectTimedOut(greedy, 1, kPerBroker);
  // Its places are free again.
  greedy.Ask(To(99, "127.0.0.1", host.port, true));
  Got again = greedy.Receive();
  ASSERT_TRUE(again.answer.has_value());
  EXPECT_EQ(again.answer->error, 0) << strerror(again.answer->error);
}

TEST(EgressBoundsTest, OneRequestOverTheInFlightBoundIsAnsweredEagainAtOnce) {
  const std::string path = "/tmp/skill-mcp-egress-test-i" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  std::vector<UniqueFd> held;
  LocalPort stuck = FullListener(held);
  auto helper = Helper::Activated(path, {"--connect-timeout-ms", "1500"});
  std::vector<BrokerEnd> brokers;
  for (size_t i = 0; i < kInFlight / kPerBroker; ++i) {
    brokers.push_back(helper->Connect());
    AskStuck(brokers.back(), stuck, static_cast<uint32_t>(1 + i * kPerBroker), kPerBroker);
    // Over its share, so answered at once: its 16 are all in flight by then.
    const int64_t t = NowMs();
    brokers.back().Ask(To(1000, "127.0.0.1", stuck.port, true));
    ExpectAtOnce(brokers.back(), 1000, EAGAIN, t);
  }
  // The 65th, from a broker with nothing in flight, is answered before any of the 64
  // could time out, so the bound held them all.
  BrokerEnd late = helper->Connect();
  const int64_t t0 = NowMs();
  late.Ask(To(kInFlight + 1, "127.0.0.1", stuck.port, true));
  ExpectAtOnce(late, kInFlight + 1, EAGAIN, t0);
  for (size_t i = 0; i < brokers.size(); ++i)
    ExpectTimedOut(brokers[i], static_cast<uint32_t>(1 + i * kPerBroker), kPerBroker);
  // Their places are free again.
  LocalPort host = LocalPort::Open(true);
  late.Ask(To(99, "127.0.0.1", host.port, true));
  Got again = late.Receive();
  ASSERT_TRUE(again.answer.has_value());
  EXPECT_EQ(again.answer->error, 0) << strerror(again.answer->error);
}

// One deadline for the whole request: a connect that would be given 10 s ends at 0.7 s.
TEST(EgressBoundsTest, ARequestEndsAtItsDeadlineWhateverTheConnectTimeout) {
  std::vector<UniqueFd> held;
  LocalPort stuck = FullListener(held);
  auto helper = Helper::Connected({"--connect-timeout-ms", "10000", "--request-timeout-ms", "700"});
  const int64_t t0 = NowMs();
  helper->broker().Ask(To(1, "127.0.0.1", stuck.port, true));
  Got got = helper->broker().Receive(5000);
  ASSERT_FALSE(got.timed_out) << "still connecting after 5 s";
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->error, ETIMEDOUT) << strerror(got.answer->error);
  EXPECT_EQ(got.answer->port, stuck.port) << "the address that did not connect is named";
  EXPECT_GE(NowMs() - t0, 600);
  EXPECT_LT(NowMs() - t0, 3000);
}

TEST(EgressBoundsTest, AMalformedRequestIsAnsweredEinvalWithoutADescriptorAndTheHelperGoesOn) {
  LocalPort host = LocalPort::Open(true);
  auto helper = Helper::Connected();
  BrokerEnd& b = helper->broker();
  std::string bad_flag = *EncodeEgressRequest(To(11, "127.0.0.1", host.port, true));
  bad_flag[14] = 0x03;  // an unknown flag bit beside allow-local
  std::string upper = *EncodeEgressRequest(To(12, "example.com", 443, true));
  upper[17] = 'E';
  std::string oversize = *EncodeEgressRequest(To(13, "example.com", 443, true));
  oversize += std::string(400, 'x');
  const std::string with_fd = *EncodeEgressRequest(To(14, "127.0.0.1", host.port, true));

  ASSERT_EQ(b.SendRaw(bad_flag), 0);
  ASSERT_EQ(b.SendRaw(upper), 0);
  ASSERT_EQ(b.SendRaw(oversize), 0);
  ASSERT_EQ(b.SendRaw(with_fd, host.fd.get()), 0);  // a request never carries a descriptor
  for (uint32_t id : {11u, 12u, 13u, 14u}) {
    Got got = b.Receive();
    ASSERT_TRUE(got.answer.has_value()) << id;
    EXPECT_EQ(got.answer->id, id);
    EXPECT_EQ(got.answer->error, EINVAL) << id;
    EXPECT_FALSE(got.fd.valid());
  }
  EXPECT_FALSE(host.Accept(200).valid()) << "a malformed request connected anyway";
  b.Ask(To(15, "127.0.0.1", host.port, true));
  Got got = b.Receive();
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->error, 0) << "the helper is still serving";
  EXPECT_TRUE(got.fd.valid());
}

TEST(EgressBoundsTest, AMessageThatIsNotARequestClosesThatBrokerOnly) {
  const std::string path = "/tmp/skill-mcp-egress-test-" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  auto helper = Helper::Activated(path);
  LocalPort host = LocalPort::Open(true);
  BrokerEnd rude = helper->Connect();
  BrokerEnd polite = helper->Connect();
  ASSERT_EQ(rude.SendRaw("GET / HTTP/1.1\r\n\r\n"), 0);
  Got closed = rude.Receive();
  EXPECT_EQ(closed.status, FdPacket::Status::kClosed) << "that broker is dropped";
  polite.Ask(To(1, "127.0.0.1", host.port, true));
  Got got = polite.Receive();
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->error, 0) << "the other broker is still served";
  BrokerEnd later = helper->Connect();
  later.Ask(To(2, "127.0.0.1", host.port, false));
  Got refused = later.Receive();
  ASSERT_TRUE(refused.answer.has_value());
  EXPECT_EQ(refused.answer->error, EACCES) << "and new ones too";
  EXPECT_EQ(helper->WaitExit(0), -1) << "the helper is still running";
}

TEST(EgressBoundsTest, OneBrokerOverTheBoundIsClosedAndItsPlaceComesBack) {
  const std::string path = "/tmp/skill-mcp-egress-test-b" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  auto helper = Helper::Activated(path);
  LocalPort closed = LocalPort::Open(false);
  // Each served once, so that the helper has accepted it before the next one comes.
  std::vector<BrokerEnd> brokers;
  for (size_t i = 0; i < kBrokers; ++i) {
    brokers.push_back(helper->Connect());
    brokers.back().Ask(To(static_cast<uint32_t>(i), "127.0.0.1", closed.port, true));
    Got got = brokers.back().Receive();
    ASSERT_TRUE(got.answer.has_value()) << i;
    ASSERT_EQ(got.answer->error, ECONNREFUSED) << i;
  }
  BrokerEnd over = helper->Connect();
  Got refused = over.Receive(5000);
  ASSERT_FALSE(refused.timed_out) << "the broker over the bound was kept";
  EXPECT_EQ(refused.status, FdPacket::Status::kClosed);
  // One goes away; once the helper has seen it, a new broker is served again.
  brokers.front().Close();
  Got got;
  for (int attempt = 0; attempt < 50; ++attempt) {
    BrokerEnd next = helper->Connect();
    // Not Ask: this one may be closed before its request is sent.
    next.SendRaw(*EncodeEgressRequest(To(99, "127.0.0.1", closed.port, true)));
    got = next.Receive(5000);
    if (got.answer) break;
    usleep(20000);
  }
  ASSERT_TRUE(got.answer.has_value()) << "no place came back";
  EXPECT_EQ(got.answer->error, ECONNREFUSED);
}

TEST(EgressBoundsTest, ActivationNeedsItsOwnPidAndOneListeningSeqpacketSocket) {
  UniqueFd seq(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));  // not listening
  UniqueFd stream(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const std::string path = "/tmp/skill-mcp-egress-test-s" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(bind(stream.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(listen(stream.get(), 1), 0);
  struct Case {
    const char* why;
    int fd;
    bool wrong_pid;
  };
  for (const Case& c :
       {Case{"not listening", seq.get(), false}, Case{"a stream socket", stream.get(), false},
        Case{"another process's variables", stream.get(), true}}) {
    pid_t pid = Helper::SpawnRaw({}, c.fd, /*listen=*/true, c.wrong_pid);
    const int status = Helper::WaitPid(pid, 5000);
    ASSERT_NE(status, -1) << c.why;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << c.why;
  }
  unlink(path.c_str());
}

// Requests answered at once (EINVAL: an unknown flag), never read, until the helper has
// taken nothing for 500 ms: once the answers fill the broker's end, the helper stops
// reading, and the requests fill its end. How many it took.
int FillUntilTheHelperStopsReading(BrokerEnd& b) {
  std::string request = *EncodeEgressRequest(To(1, "example.com", 443, false));
  request[14] = 0x02;
  int sent = 0;
  int64_t refused_since = -1;
  while (sent < 100000) {
    const int err = b.SendRaw(request);
    if (err == 0) {
      ++sent;
      refused_since = -1;
      continue;
    }
    EXPECT_EQ(err, EAGAIN);
    if (refused_since < 0) refused_since = NowMs();
    if (NowMs() - refused_since >= 500) return sent;
    usleep(20000);
  }
  ADD_FAILURE() << "the helper kept reading " << sent << " requests";
  return sent;
}

TEST(EgressBoundsTest, ABrokerThatStopsReadingIsNotReadEitherAndIsDropped) {
  auto helper = Helper::Connected();
  // What it took is bounded by the two sockets' queues, not by what the broker sends.
  EXPECT_LT(FillUntilTheHelperStopsReading(helper->broker()), 10000);
  // Then it drops the broker, whose connection then closes, and exits (its only one).
  const int64_t t0 = NowMs();
  const int status = helper->WaitExit(static_cast<int>(kStalledMs) + 5000);
  ASSERT_NE(status, -1) << "the helper kept a broker that does not read";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GE(NowMs() - t0, kStalledMs - 1000);
}

TEST(EgressBoundsTest, ABrokerThatClosesWithAnswersWaitingIsDroppedAtOnce) {
  auto helper = Helper::Connected();
  FillUntilTheHelperStopsReading(helper->broker());
  helper->CloseBroker();
  const int status = helper->WaitExit(2000);
  ASSERT_NE(status, -1) << "the helper did not notice its broker had gone";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace skillmcp::egress_test
