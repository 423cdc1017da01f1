// The declared network mode's pure parts: the resolver's answers, and the refusals the
// tun device's packets get, the latter checked by a real kernel: a socket in a network
// namespace of the test's own connects through a tun device the test answers with
// RefusePacket, and must see ECONNREFUSED at once (a reply with a wrong checksum, address
// or sequence number would be dropped by the kernel and the connect would hang).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "worker/egress_dns.h"
#include "worker/egress_refuse.h"

namespace skillmcp::worker {
namespace {

// ---- the resolver ----

std::vector<uint8_t> Query(uint16_t id, const std::vector<std::string>& labels, uint16_t type,
                           uint8_t flags2 = 0x01 /* RD */) {
  std::vector<uint8_t> q = {static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), flags2, 0,
                            0, 1, 0, 0, 0, 0, 0, 0};
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
  if (ioctl(s, SIOCSIFADDR, &addr) != 0) t.skip = std::string("SIOCSIFADDR: ") + std::strerror(errno);
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

// Runs `body` in a forked child inside a namespace with the tun route; the child's exit
// code is the number of failed checks, 77 for a skip (its reason on stderr).
int InChild(const std::function<int(int tun)>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    Tun t = EnterNamespaceWithTun();
    if (!t.skip.empty()) {
      fprintf(stderr, "%s\n", t.skip.c_str());
      _exit(77);
    }
    _exit(body(t.fd));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(EgressRefuseTest, ATcpConnectThroughTheTunIsRefusedAtOnceAndRecorded) {
  int rc = InChild([](int tun) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(8443);
    inet_pton(AF_INET, "203.0.113.9", &to.sin_addr);
    if (connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 || errno != EINPROGRESS) {
      fprintf(stderr, "connect: %s\n", std::strerror(errno));
      return 1;
    }
    std::vector<RefusedAttempt> attempts = Answer(tun, 300);
    pollfd p{s, POLLOUT, 0};
    poll(&p, 1, 0);
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    int failed = 0;
    if (err != ECONNREFUSED) {
      fprintf(stderr, "connect ended with %s, not ECONNREFUSED\n", std::strerror(err));
      ++failed;
    }
    if (attempts.empty() || !(attempts[0] == RefusedAttempt{"tcp", "203.0.113.9", 8443})) {
      fprintf(stderr, "attempt not recorded\n");
      ++failed;
    }
    return failed;
  });
  if (rc == 77) GTEST_SKIP() << "no namespace with a tun device here (see stderr)";
  EXPECT_EQ(rc, 0);
}

TEST(EgressRefuseTest, AnIpv6ConnectThroughTheTunIsRefusedToo) {
  int rc = InChild([](int tun) {
    int s = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in6 to{};
    to.sin6_family = AF_INET6;
    to.sin6_port = htons(443);
    inet_pton(AF_INET6, "2001:db8::9", &to.sin6_addr);
    if (connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 || errno != EINPROGRESS) {
      fprintf(stderr, "connect: %s\n", std::strerror(errno));
      return 1;
    }
    std::vector<RefusedAttempt> attempts = Answer(tun, 300);
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    int failed = 0;
    if (err != ECONNREFUSED) {
      fprintf(stderr, "connect ended with %s, not ECONNREFUSED\n", std::strerror(err));
      ++failed;
    }
    bool seen = false;
    for (const auto& a : attempts) seen |= a == RefusedAttempt{"tcp", "2001:db8::9", 443};
    if (!seen) ++failed;
    return failed;
  });
  if (rc == 77) GTEST_SKIP() << "no namespace with a tun device here (see stderr)";
  EXPECT_EQ(rc, 0);
}

TEST(EgressRefuseTest, AUdpDatagramThroughTheTunGetsPortUnreachable) {
  int rc = InChild([](int tun) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(53);
    inet_pton(AF_INET, "198.51.100.7", &to.sin_addr);
    connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to);
    if (send(s, "hello", 5, 0) != 5) return 1;
    std::vector<RefusedAttempt> attempts = Answer(tun, 300);
    char b[8];
    int failed = 0;
    if (recv(s, b, sizeof b, 0) != -1 || errno != ECONNREFUSED) {
      fprintf(stderr, "recv: %s, not ECONNREFUSED\n", std::strerror(errno));
      ++failed;
    }
    if (attempts.empty() || !(attempts[0] == RefusedAttempt{"udp", "198.51.100.7", 53})) ++failed;
    return failed;
  });
  if (rc == 77) GTEST_SKIP() << "no namespace with a tun device here (see stderr)";
  EXPECT_EQ(rc, 0);
}

TEST(EgressRefuseTest, PositiveControlWithoutAnswersTheConnectStaysPending) {
  int rc = InChild([](int tun) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(8443);
    inet_pton(AF_INET, "203.0.113.9", &to.sin_addr);
    connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to);
    // The SYN reaches the device (the channel works), and nothing refuses it.
    pollfd t{tun, POLLIN, 0};
    if (poll(&t, 1, 1000) != 1) return 1;
    pollfd p{s, POLLOUT, 0};
    return poll(&p, 1, 300) == 0 ? 0 : 2;
  });
  if (rc == 77) GTEST_SKIP() << "no namespace with a tun device here (see stderr)";
  EXPECT_EQ(rc, 0);
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
