// The declared network mode's pure parts: the resolver's answers, and the refusals the
// tun device's packets get, the latter checked by a real kernel: a socket in a network
// namespace of the test's own connects through a tun device the test answers with
// RefusePacket, and must see ECONNREFUSED at once (a reply with a wrong checksum, address
// or sequence number would be dropped by the kernel and the connect would hang).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "worker/egress_dns.h"
#include "worker/egress_refuse.h"

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

struct Tun {
  int fd = -1;
  std::string skip;  // why the test cannot run here
};

void IfUp(int sock, const char* name) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  ASSERT_EQ(ioctl(sock, SIOCGIFFLAGS, &ifr), 0) << std::strerror(errno);
  ifr.ifr_flags |= IFF_UP;
  ASSERT_EQ(ioctl(sock, SIOCSIFFLAGS, &ifr), 0) << std::strerror(errno);
}

// In the calling process (a child the test forked): a network namespace of its own whose
// default route, v4 and v6, is a tun device, returned open.
// Whether /proc/net/if_inet6 (this network namespace's) lists `hex` (32 hex digits) without
// the tentative flag (IFA_F_TENTATIVE, 0x40).
bool Ipv6AddressReady(const char* hex) {
  FILE* f = std::fopen("/proc/net/if_inet6", "r");
  if (f == nullptr) return true;  // nothing to wait on
  char addr[33];
  unsigned index = 0, prefix = 0, scope = 0, flags = 0;
  bool ready = false;
  while (std::fscanf(f, "%32s %x %x %x %x %*s", addr, &index, &prefix, &scope, &flags) == 5)
    if (std::strcmp(addr, hex) == 0) ready = (flags & 0x40) == 0;
  std::fclose(f);
  return ready;
}

Tun EnterNamespaceWithTun() {
  Tun t;
  if (unshare(CLONE_NEWNET) != 0 && (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)) {
    t.skip = std::string("no network namespace: ") + std::strerror(errno);
    return t;
  }
  t.fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (t.fd < 0) {
    t.skip = std::string("/dev/net/tun: ") + std::strerror(errno);
    return t;
  }
  ifreq ifr{};
  std::strcpy(ifr.ifr_name, "refuse0");
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (ioctl(t.fd, TUNSETIFF, &ifr) != 0) {
    t.skip = std::string("TUNSETIFF: ") + std::strerror(errno);
    return t;
  }
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  IfUp(s, "lo");
  IfUp(s, "refuse0");
  ifreq addr{};
  std::strcpy(addr.ifr_name, "refuse0");
  auto* sin = reinterpret_cast<sockaddr_in*>(&addr.ifr_addr);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, "10.255.255.1", &sin->sin_addr);
  if (ioctl(s, SIOCSIFADDR, &addr) != 0)
    t.skip = std::string("SIOCSIFADDR: ") + std::strerror(errno);
  rtentry rt{};
  auto* dst = reinterpret_cast<sockaddr_in*>(&rt.rt_dst);
  dst->sin_family = AF_INET;
  auto* mask = reinterpret_cast<sockaddr_in*>(&rt.rt_genmask);
  mask->sin_family = AF_INET;
  rt.rt_flags = RTF_UP;
  char dev[] = "refuse0";
  rt.rt_dev = dev;
  if (ioctl(s, SIOCADDRT, &rt) != 0) t.skip = std::string("SIOCADDRT: ") + std::strerror(errno);
  close(s);
  // IPv6: an address of its own (without duplicate address detection, which would hold it
  // tentative) and the default route.
  int s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s6 >= 0) {
    // linux/ipv6.h's in6_ifreq (that header and glibc's net/route.h cannot meet).
    struct {
      in6_addr ifr6_addr;
      uint32_t ifr6_prefixlen;
      int ifr6_ifindex;
    } a6{};
    inet_pton(AF_INET6, "fd00:5eed::1", &a6.ifr6_addr);
    a6.ifr6_prefixlen = 128;
    a6.ifr6_ifindex = static_cast<int>(if_nametoindex("refuse0"));
    (void)ioctl(s6, SIOCSIFADDR, &a6);
    in6_rtmsg r6{};
    r6.rtmsg_flags = RTF_UP;
    r6.rtmsg_metric = 1;
    r6.rtmsg_ifindex = a6.ifr6_ifindex;
    (void)ioctl(s6, SIOCADDRT, &r6);
    close(s6);
    // why: the kernel takes the address up asynchronously; a reply to it that arrives while
    // it is still tentative is dropped, so the attempt waits until it is usable (IPv6 ready).
    for (int i = 0; i < 200 && !Ipv6AddressReady("fd005eed000000000000000000000001"); ++i)
      usleep(10000);
  }
  return t;
}

// Answers every packet on the tun device with RefusePacket for `ms` milliseconds,
// counting the attempts; in a thread of the child.
std::vector<RefusedAttempt> Answer(int tun, int ms) {
  std::vector<RefusedAttempt> attempts;
  pollfd p{tun, POLLIN, 0};
  while (poll(&p, 1, ms) > 0) {
    uint8_t buf[2048];
    ssize_t n = read(tun, buf, sizeof buf);
    if (n <= 0) break;
    Refusal r = RefusePacket(std::span<const uint8_t>(buf, static_cast<size_t>(n)));
    if (!r.reply.empty()) (void)!write(tun, r.reply.data(), r.reply.size());
    if (r.attempt) attempts.push_back(*r.attempt);
  }
  return attempts;
}

// What one attempt through the tun device came to, seen from the socket that made it.
struct Observed {
  std::string skip;      // why the test cannot run here
  std::string failure;   // what went wrong before the attempt was under way
  bool reached = false;  // unanswered: a packet of it reached the device within 1 s
  bool pending = false;  // the socket had no answer yet (a TCP connect still in progress)
  int err = 0;           // the socket's error (SO_ERROR) once answered or watched
  std::vector<RefusedAttempt> attempts;  // answered: what RefusePacket recorded, in order
};

// The child's report, one line a field, read back by the parent.
std::string Report(const Observed& o) {
  std::string r = "skip " + o.skip + "\nfailure " + o.failure + "\nreached " +
                  std::to_string(o.reached) + "\npending " + std::to_string(o.pending) + "\nerr " +
                  std::to_string(o.err) + "\n";
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
    if (key == "reached") o.reached = value == "1";
    if (key == "pending") o.pending = value == "1";
    if (key == "err") o.err = std::stoi(value);
    if (key == "attempt") {
      std::istringstream fields(value);
      RefusedAttempt a;
      fields >> a.protocol >> a.address >> a.port;
      o.attempts.push_back(a);
    }
  }
  return o;
}

// In the child, inside the namespace: a `type` socket connects to `address` port `port`
// (a datagram socket sends "hello" too); then the device is answered with RefusePacket
// for 300 ms (`refuse`), or only watched for the first packet, and the socket observed.
Observed Attempt(int tun, int type, const char* address, uint16_t port, bool refuse) {
  Observed o;
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
  int s = socket(to.ss_family, type | SOCK_NONBLOCK, 0);
  const int rc = connect(s, reinterpret_cast<sockaddr*>(&to), to_len);
  if (type == SOCK_STREAM && (rc == 0 || errno != EINPROGRESS)) {
    o.failure = std::string("connect: ") + std::strerror(errno);
    return o;
  }
  if (type == SOCK_DGRAM && send(s, "hello", 5, 0) != 5) {
    o.failure = std::string("send: ") + std::strerror(errno);
    return o;
  }
  if (refuse) {
    o.attempts = Answer(tun, 300);
  } else {
    pollfd t{tun, POLLIN, 0};
    o.reached = poll(&t, 1, 1000) == 1;
  }
  pollfd p{s, POLLOUT, 0};
  o.pending = poll(&p, 1, refuse ? 0 : 300) == 0;
  socklen_t len = sizeof o.err;
  getsockopt(s, SOL_SOCKET, SO_ERROR, &o.err, &len);
  return o;
}

// Attempt, in a forked child inside a network namespace with the tun route; the child
// reports through a pipe.
Observed AttemptThroughTun(int type, const char* address, uint16_t port, bool refuse) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return Observed{.failure = "pipe2 failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    Tun t = EnterNamespaceWithTun();
    const std::string text = Report(t.skip.empty() ? Attempt(t.fd, type, address, port, refuse)
                                                   : Observed{.skip = t.skip});
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

// A `type` socket's attempt at `attempt`'s address and port, answered: refused at once
// (ECONNREFUSED) and recorded as `attempt`.
void ExpectRefused(int type, const RefusedAttempt& attempt) {
  Observed o = AttemptThroughTun(type, attempt.address.c_str(), attempt.port, /*refuse=*/true);
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

TEST(EgressRefuseTest, AUdpDatagramThroughTheTunGetsPortUnreachable) {
  ExpectRefused(SOCK_DGRAM, {"udp", "198.51.100.7", 53});
}

TEST(EgressRefuseTest, PositiveControlWithoutAnswersTheConnectStaysPending) {
  Observed o = AttemptThroughTun(SOCK_STREAM, "203.0.113.9", 8443, /*refuse=*/false);
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
