// The declared network mode's pure parts: the resolver's answers, and the refusals the
// tun device's packets get, the latter checked by a real kernel: a socket in the run's
// own network as the worker makes it (EnterOwnNetwork, in a process the test forks)
// connects through its tun device, which the test answers with RefusePacket, and must see
// ECONNREFUSED at once (a reply with a wrong checksum, address or sequence number, or to
// an address the kernel does not yet accept, would be dropped and the connect would hang).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "shared/unique_fd.h"
#include "worker/egress_cell.h"
#include "worker/egress_dns.h"
#include "worker/egress_refuse.h"
#include "worker/ipv6_address.h"

namespace skillmcp::worker {
namespace {

// ---- the resolver ----

std::vector<uint8_t> Query(uint16_t id, const std::vector<std::string>& labels, uint16_t type,
                           uint8_t flags2 = 0x01 /* RD */) {
  std::vector<uint8_t> q = {
      static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), flags2, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  for (const std::string& l : labels) {
    q.push_back(static_cast<uint8_t>(l.size()));
    q.insert(q.end(), l.begin(), l.end());
  }
  q.push_back(0);
  q.push_back(static_cast<uint8_t>(type >> 8));
  q.push_back(static_cast<uint8_t>(type));
  q.push_back(0);
  q.push_back(1);
  return q;
}

std::optional<in_addr> AllowApi(std::string_view name) {
  if (name != "api.example.com") return std::nullopt;
  in_addr a{};
  inet_pton(AF_INET, "127.77.0.1", &a);
  return a;
}

int Rcode(const std::vector<uint8_t>& r) { return r[3] & 0x0f; }
int AnswerCount(const std::vector<uint8_t>& r) { return r[6] << 8 | r[7]; }

TEST(EgressDnsTest, AnAllowedNameGetsItsAllottedAddressWithTheQuestionAsAsked) {
  std::vector<uint8_t> q = Query(0xbeef, {"Api", "EXAMPLE", "com"}, 1);
  auto r = AnswerDnsQuery(q, AllowApi);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)[0], 0xbe);
  EXPECT_EQ((*r)[1], 0xef);
  EXPECT_EQ((*r)[2], 0x81);  // QR, RD echoed
  EXPECT_EQ(Rcode(*r), 0);
  EXPECT_EQ(AnswerCount(*r), 1);
  // The question is echoed byte for byte (0x20 letter case kept).
  EXPECT_TRUE(std::equal(q.begin() + 12, q.end(), r->begin() + 12));
  const size_t answer = q.size();
  ASSERT_EQ(r->size(), answer + 16);
  EXPECT_EQ((*r)[answer], 0xc0);
  EXPECT_EQ((*r)[answer + 1], 12);
  EXPECT_EQ((*r)[answer + 11], 4);  // RDLENGTH
  EXPECT_EQ((*r)[answer + 12], 127);
  EXPECT_EQ((*r)[answer + 13], 77);
  EXPECT_EQ((*r)[answer + 14], 0);
  EXPECT_EQ((*r)[answer + 15], 1);
}

TEST(EgressDnsTest, AnotherTypeOfAnAllowedNameIsAnEmptyAnswer) {
  auto r = AnswerDnsQuery(Query(1, {"api", "example", "com"}, 28 /* AAAA */), AllowApi);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Rcode(*r), 0);
  EXPECT_EQ(AnswerCount(*r), 0);
}

TEST(EgressDnsTest, ANameNotAllowedDoesNotExist) {
  for (auto labels : std::vector<std::vector<std::string>>{
           {"evil", "example", "com"}, {"example", "com"}, {"api", "example", "com", "evil"}}) {
    auto r = AnswerDnsQuery(Query(7, labels, 1), AllowApi);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(Rcode(*r), 3);
    EXPECT_EQ(AnswerCount(*r), 0);
  }
}

TEST(EgressDnsTest, ANameWithCharactersNoHostHasIsNeverOffered) {
  bool offered = false;
  auto allot = [&](std::string_view) {
    offered = true;
    return std::optional<in_addr>(in_addr{});
  };
  auto r = AnswerDnsQuery(Query(7, {std::string("api\0x", 5), "com"}, 1), allot);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Rcode(*r), 3);
  EXPECT_FALSE(offered);
}

TEST(EgressDnsTest, MalformedQueriesGetFormErrOrNothing) {
  std::vector<uint8_t> q = Query(9, {"api", "example", "com"}, 1);
  // Truncated inside the question.
  auto r = AnswerDnsQuery(std::span(q).first(q.size() - 3), AllowApi);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Rcode(*r), 1);
  // A compression pointer in a query's question.
  std::vector<uint8_t> p = q;
  p[12] = 0xc0;
  r = AnswerDnsQuery(p, AllowApi);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Rcode(*r), 1);
  // Two questions.
  p = q;
  p[5] = 2;
  EXPECT_EQ(Rcode(*AnswerDnsQuery(p, AllowApi)), 1);
  // Another opcode (status).
  p = q;
  p[2] = 0x10;
  EXPECT_EQ(Rcode(*AnswerDnsQuery(p, AllowApi)), 4);
  // A response, and a short header: no answer at all.
  p = q;
  p[2] |= 0x80;
  EXPECT_FALSE(AnswerDnsQuery(p, AllowApi).has_value());
  EXPECT_FALSE(AnswerDnsQuery(std::span(q).first(11), AllowApi).has_value());
}

// ---- the refusals, against a real kernel ----

constexpr char kTunAddress6Hex[] = "fd005eed000000000000000000000001";  // fd00:5eed::1

int64_t NowMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

struct Tun {
  UniqueFd fd;
  std::string skip;     // why the test cannot run here
  std::string failure;  // what the worker's network came to where it should have worked
};

// In the calling process (a child the test forked): the run's own network as the worker
// makes it (EnterOwnNetwork), whose default route, v4 and v6, is the tun device, returned
// open. Where the test is not root, in a user namespace of its own first.
Tun EnterRunNetwork() {
  Tun t;
  UniqueFd probe(open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!probe.valid()) {
    t.skip = std::string("/dev/net/tun: ") + std::strerror(errno);
    return t;
  }
  probe.reset();
  if (geteuid() != 0 && unshare(CLONE_NEWUSER) != 0) {
    t.skip = std::string("no user namespace: ") + std::strerror(errno);
    return t;
  }
  EgressCell cell;
  if (StepResult r = EnterOwnNetwork(cell)) {
    t.skip = std::string("no network of its own: ") + std::strerror(r->err);
    return t;
  }
  // The device opens here, so a cell without it is the worker's failure, not the host's.
  if (!cell.tun.valid()) t.failure = "the worker's network has no tun route";
  t.fd = std::move(cell.tun);
  return t;
}

// The flags /proc/net/if_inet6 (this network namespace's) lists for `hex` (32 hex
// digits), or -1 where it is not listed.
int Ipv6AddressFlags(const char* hex) {
  FILE* f = std::fopen("/proc/net/if_inet6", "r");
  if (f == nullptr) return -1;
  char addr[33];
  unsigned index = 0, prefix = 0, scope = 0, flags = 0;
  int found = -1;
  while (std::fscanf(f, "%32s %x %x %x %x %*s", addr, &index, &prefix, &scope, &flags) == 5)
    if (std::strcmp(addr, hex) == 0) found = static_cast<int>(flags);
  std::fclose(f);
  return found;
}

// What one attempt through the tun device came to, seen from the socket that made it.
struct Observed {
  std::string skip;        // why the test cannot run here
  std::string failure;     // what went wrong before the attempt was under way
  int address_flags = -1;  // the tun's IPv6 address's flags as the network was made (-1: none)
  bool reached = false;    // unanswered: a packet of it reached the device within 1 s
  bool pending = false;    // the socket had no answer yet (a TCP connect still in progress)
  int err = 0;             // the socket's error (SO_ERROR) once answered or watched, or a body's
  int refused_ms = -1;     // answered: when the socket's error came, from the connect (-1: never)
  std::vector<RefusedAttempt> attempts;  // answered: what RefusePacket recorded, in order
};

// Answers every packet on the tun device with RefusePacket, recording the attempts in
// `o`, until `socket` reports its error (noted in `o`, from `start`) or `deadline`.
void Answer(int tun, int socket, int64_t start, int64_t deadline, Observed& o) {
  pollfd p[2] = {{tun, POLLIN, 0}, {socket, 0, 0}};  // POLLERR is always reported
  for (int64_t left; (left = deadline - NowMs()) > 0;) {
    if (poll(p, 2, static_cast<int>(left)) <= 0) break;
    if ((p[1].revents & (POLLERR | POLLHUP)) != 0) {
      o.refused_ms = static_cast<int>(NowMs() - start);
      return;
    }
    if ((p[0].revents & POLLIN) == 0) continue;
    uint8_t buf[2048];
    ssize_t n = read(tun, buf, sizeof buf);
    if (n < 0 && errno == EAGAIN) continue;
    if (n <= 0) break;
    Refusal r = RefusePacket(std::span<const uint8_t>(buf, static_cast<size_t>(n)));
    if (!r.reply.empty()) (void)!write(tun, r.reply.data(), r.reply.size());
    if (r.attempt) o.attempts.push_back(*r.attempt);
  }
}

// The child's report, one line a field, read back by the parent.
std::string Report(const Observed& o) {
  std::string r = "skip " + o.skip + "\nfailure " + o.failure + "\nflags " +
                  std::to_string(o.address_flags) + "\nreached " + std::to_string(o.reached) +
                  "\npending " + std::to_string(o.pending) + "\nerr " + std::to_string(o.err) +
                  "\nrefused_ms " + std::to_string(o.refused_ms) + "\n";
  for (const RefusedAttempt& a : o.attempts)
    r += "attempt " + a.protocol + " " + a.address + " " + std::to_string(a.port) + "\n";
  return r;
}

// The report the child writes to `fd`, read to its end; `fd` is closed.
Observed ReadReport(int fd) {
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  Observed o;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "skip") o.skip = value;
    if (key == "failure") o.failure = value;
    if (key == "flags") o.address_flags = std::stoi(value);
    if (key == "reached") o.reached = value == "1";
    if (key == "pending") o.pending = value == "1";
    if (key == "err") o.err = std::stoi(value);
    if (key == "refused_ms") o.refused_ms = std::stoi(value);
    if (key == "attempt") {
      std::istringstream fields(value);
      RefusedAttempt a;
      fields >> a.protocol >> a.address >> a.port;
      o.attempts.push_back(a);
    }
  }
  return o;
}

// In the child, inside the run's network the moment it is made: a `type` socket connects
// to `address` port `port` (a datagram socket sends "hello" too); then the device is
// answered with RefusePacket until the socket's error or for `answer_ms`, or, with 0,
// only watched for the first packet, and the socket observed.
Observed Attempt(int tun, int type, const char* address, uint16_t port, int answer_ms) {
  Observed o;
  o.address_flags = Ipv6AddressFlags(kTunAddress6Hex);
  sockaddr_storage to{};
  socklen_t to_len = 0;
  if (std::strchr(address, ':') != nullptr) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&to);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    inet_pton(AF_INET6, address, &v6->sin6_addr);
    to_len = sizeof *v6;
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&to);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    inet_pton(AF_INET, address, &v4->sin_addr);
    to_len = sizeof *v4;
  }
  UniqueFd s(socket(to.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int64_t start = NowMs();
  const int rc = connect(s.get(), reinterpret_cast<sockaddr*>(&to), to_len);
  if (type == SOCK_STREAM && (rc == 0 || errno != EINPROGRESS)) {
    o.failure = std::string("connect: ") + std::strerror(errno);
    return o;
  }
  if (type == SOCK_DGRAM && send(s.get(), "hello", 5, 0) != 5) {
    o.failure = std::string("send: ") + std::strerror(errno);
    return o;
  }
  if (answer_ms > 0) {
    Answer(tun, s.get(), start, start + answer_ms, o);
  } else {
    pollfd t{tun, POLLIN, 0};
    o.reached = poll(&t, 1, 1000) == 1;
  }
  pollfd p{s.get(), POLLOUT, 0};
  o.pending = poll(&p, 1, answer_ms > 0 ? 0 : 300) == 0;
  socklen_t len = sizeof o.err;
  getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &o.err, &len);
  return o;
}

// What `body` observes in a forked child inside the run's network, given its tun device;
// the child reports through a pipe.
Observed InRunNetwork(const std::function<Observed(int tun)>& body) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return Observed{.failure = "pipe2 failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    Tun t = EnterRunNetwork();
    const std::string text = Report(!t.skip.empty() || !t.failure.empty()
                                        ? Observed{.skip = t.skip, .failure = t.failure}
                                        : body(t.fd.get()));
    _exit(write(report[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(report[1]);
  Observed o = ReadReport(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    o.failure = "the child ended without its report (status " + std::to_string(status) + ")";
  return o;
}

Observed AttemptThroughTun(int type, const char* address, uint16_t port, int answer_ms) {
  return InRunNetwork([&](int tun) { return Attempt(tun, type, address, port, answer_ms); });
}

// A `type` socket's attempt at `attempt`'s address and port, answered for up to 300 ms:
// refused at once (ECONNREFUSED within the answer) and recorded as `attempt`.
void ExpectRefused(int type, const RefusedAttempt& attempt) {
  Observed o = AttemptThroughTun(type, attempt.address.c_str(), attempt.port, 300);
  if (!o.skip.empty()) GTEST_SKIP() << "no namespace with a tun device here: " << o.skip;
  ASSERT_EQ(o.failure, "");
  EXPECT_EQ(o.err, ECONNREFUSED) << "the socket's error is " << std::strerror(o.err);
  EXPECT_NE(std::find(o.attempts.begin(), o.attempts.end(), attempt), o.attempts.end())
      << "not recorded; the report:\n"
      << Report(o);
}

TEST(EgressRefuseTest, ATcpConnectThroughTheTunIsRefusedAtOnceAndRecorded) {
  ExpectRefused(SOCK_STREAM, {"tcp", "203.0.113.9", 8443});
}

TEST(EgressRefuseTest, AnIpv6ConnectThroughTheTunIsRefusedToo) {
  ExpectRefused(SOCK_STREAM, {"tcp", "2001:db8::9", 443});
}

// The tun's IPv6 address is usable the moment the worker's network is made: not held
// tentative (a reply to a tentative address is dropped), so an IPv6 connect made at once
// is refused at once, not at the SYN's retransmit a second later or never. Several
// networks in a row: how long the kernel would hold a new address tentative depends on
// when it reports the new link ready, which varies from one network to the next.
TEST(EgressRefuseTest, TheTunsIpv6AddressIsUsableTheMomentTheNetworkIsMade) {
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("network " + std::to_string(round + 1));
    Observed o = AttemptThroughTun(SOCK_STREAM, "2001:db8::9", 443, /*answer_ms=*/1500);
    if (!o.skip.empty()) GTEST_SKIP() << "no namespace with a tun device here: " << o.skip;
    ASSERT_EQ(o.failure, "");
    ASSERT_NE(o.address_flags, -1) << "fd00:5eed::1 is not on the device";
    EXPECT_EQ(o.address_flags & IFA_F_TENTATIVE, 0) << "tentative; the report:\n" << Report(o);
    EXPECT_EQ(o.err, ECONNREFUSED) << "the socket's error is " << std::strerror(o.err);
    EXPECT_GE(o.refused_ms, 0);
    EXPECT_LT(o.refused_ms, 500) << "refused late; the report:\n" << Report(o);
  }
}

// The kernel's answer is read, not assumed: adding the device's address again is refused,
// and the refusal's error comes back (a caller that did not wait for the acknowledgement
// would report success).
TEST(EgressRefuseTest, AnAddressTheKernelRefusesComesBackWithItsError) {
  Observed o = InRunNetwork([](int) {
    in6_addr address{};
    inet_pton(AF_INET6, "fd00:5eed::1", &address);
    return Observed{
        .err = AddIpv6AddressNow(static_cast<int>(if_nametoindex("refuse0")), address, 128)};
  });
  if (!o.skip.empty()) GTEST_SKIP() << "no namespace with a tun device here: " << o.skip;
  ASSERT_EQ(o.failure, "");
  EXPECT_EQ(o.err, EEXIST) << std::strerror(o.err);
}

TEST(EgressRefuseTest, AUdpDatagramThroughTheTunGetsPortUnreachable) {
  ExpectRefused(SOCK_DGRAM, {"udp", "198.51.100.7", 53});
}

TEST(EgressRefuseTest, PositiveControlWithoutAnswersTheConnectStaysPending) {
  Observed o = AttemptThroughTun(SOCK_STREAM, "203.0.113.9", 8443, /*answer_ms=*/0);
  if (!o.skip.empty()) GTEST_SKIP() << "no namespace with a tun device here: " << o.skip;
  ASSERT_EQ(o.failure, "");
  // The SYN reaches the device (the channel works), and nothing refuses it.
  EXPECT_TRUE(o.reached);
  EXPECT_TRUE(o.pending);
}

TEST(EgressRefuseTest, NonTcpUdpAndMalformedPacketsGetNothing) {
  EXPECT_TRUE(RefusePacket({}).reply.empty());
  std::vector<uint8_t> icmp(28, 0);
  icmp[0] = 0x45;
  icmp[3] = 28;
  icmp[9] = 1;
  EXPECT_TRUE(RefusePacket(icmp).reply.empty());  // bad header checksum, and ICMP
  std::vector<uint8_t> v6(40, 0);
  v6[0] = 0x60;
  v6[6] = 0;  // hop-by-hop extension header
  EXPECT_TRUE(RefusePacket(v6).reply.empty());
}

}  // namespace
}  // namespace skillmcp::worker
