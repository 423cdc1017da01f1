// The built helper resolving names through a name server the test plays. Before any test,
// the process enters a network and mount namespace of its own (a user namespace too when
// it is not root): /etc/resolv.conf names 127.0.0.1 with a search list and ndots:5, as in
// a Kubernetes pod; a responder on 127.0.0.1:53 answers from a table, and never answers
// the names that start with "stall" (a name server that stalls); lo carries one more
// address, 198.51.100.7, as the host's LAN address. Skipped where no namespace can be made.
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "tests/unit/egress/helper_rig.h"

namespace skillmcp::egress_test {
namespace {

constexpr size_t kInFlight = 64;   // egress/server.h, kMaxInFlight
constexpr size_t kPerBroker = 16;  // egress/server.h, kMaxInFlightPerBroker
constexpr const char* kHostLan = "198.51.100.7";
constexpr const char* kMetadata = "169.254.169.254";

// What the test's name server answers (A records; AAAA is answered with no record).
const std::map<std::string, std::string> kNames = {
    {"vault", "127.0.0.2"},
    {"api.example.test", "127.0.0.2"},
    // what the search list would make of the two names above: a trap
    {"vault.svc.cluster.local", "127.0.0.3"},
    {"api.example.test.svc.cluster.local", "127.0.0.3"},
    {"loopback.example.test", "127.0.0.1"},
    {"lan.example.test", kHostLan},
    {"metadata.example.test", kMetadata},
};

std::string g_setup_error = "not set up";
std::mutex g_mu;
std::vector<std::string> g_queries;  // guarded by g_mu

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  return f.good();
}

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

std::string SetInterface(const char* name, const char* address) {
  UniqueFd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  if (address == nullptr) {
    if (ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) return Errno("SIOCGIFFLAGS lo");
    ifr.ifr_flags |= IFF_UP;
    return ioctl(s.get(), SIOCSIFFLAGS, &ifr) == 0 ? "" : Errno("SIOCSIFFLAGS lo");
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, address, &sa.sin_addr);
  std::memcpy(&ifr.ifr_addr, &sa, sizeof sa);
  if (ioctl(s.get(), SIOCSIFADDR, &ifr) != 0) return Errno("SIOCSIFADDR");
  inet_pton(AF_INET, "255.255.255.255", &sa.sin_addr);
  std::memcpy(&ifr.ifr_netmask, &sa, sizeof sa);
  return ioctl(s.get(), SIOCSIFNETMASK, &ifr) == 0 ? "" : Errno("SIOCSIFNETMASK");
}

// `text` bound over `target` for this mount namespace.
std::string BindOver(const std::string& dir, const char* target, const std::string& text) {
  const std::string path = dir + std::strrchr(target, '/');
  if (!WriteFile(path, text)) return Errno(path.c_str());
  const bool ok = mount(path.c_str(), target, nullptr, MS_BIND, nullptr) == 0;
  const std::string error = ok ? "" : Errno(target);
  unlink(path.c_str());  // the mount keeps the file
  return error;
}

std::string EnterNamespaces() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWNS | CLONE_NEWNET) != 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0)
      return Errno("no network namespace here (unshare)");
    if (!WriteFile("/proc/self/setgroups", "deny") ||
        !WriteFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !WriteFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      return "cannot map the user namespace";
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Errno("mount /");
  if (std::string e = SetInterface("lo", nullptr); !e.empty()) return e;
  if (std::string e = SetInterface("lo:1", kHostLan); !e.empty()) return e;
  // A metadata service of the test's own, inside its namespace.
  if (std::string e = SetInterface("lo:2", kMetadata); !e.empty()) return e;
  char dir[] = "/tmp/skill-mcp-egress-ns-XXXXXX";
  if (mkdtemp(dir) == nullptr) return Errno("mkdtemp");
  std::string error = BindOver(dir, "/etc/resolv.conf",
                               "nameserver 127.0.0.1\nsearch svc.cluster.local\n"
                               "options ndots:5 timeout:30 attempts:1\n");
  if (error.empty()) error = BindOver(dir, "/etc/hosts", "127.0.0.1 localhost\n");
  if (error.empty()) error = BindOver(dir, "/etc/nsswitch.conf", "hosts: files dns\n");
  rmdir(dir);
  return error;
}

// One answer to the query in `q` (`n` bytes); empty for no answer at all.
std::string Answer(const char* q, size_t n) {
  if (n < 12) return "";
  size_t at = 12;
  std::string name;
  while (at < n && q[at] != 0) {
    const size_t len = static_cast<uint8_t>(q[at]);
    if (len > 63 || at + 1 + len > n) return "";
    if (!name.empty()) name += '.';
    for (size_t i = 0; i < len; ++i) name += static_cast<char>(tolower(q[at + 1 + i]));
    at += 1 + len;
  }
  if (at + 5 > n) return "";
  const uint16_t type =
      static_cast<uint16_t>(static_cast<uint8_t>(q[at + 1]) << 8 | static_cast<uint8_t>(q[at + 2]));
  const size_t end = at + 5;  // the root label, type and class
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_queries.push_back(name);
  }
  if (name.rfind("stall", 0) == 0) return "";
  const auto it = kNames.find(name);
  const bool a = it != kNames.end() && type == 1;
  std::string r(q, end);
  r[2] = static_cast<char>(0x80 | (q[2] & 0x01));                 // an answer, recursion as asked
  r[3] = static_cast<char>(0x80 | (it == kNames.end() ? 3 : 0));  // NXDOMAIN or not
  r[4] = 0, r[5] = 1;                                             // one question
  r[6] = 0, r[7] = a ? 1 : 0;
  r[8] = r[9] = r[10] = r[11] = 0;  // no authority, no additional records
  if (a) {
    r += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04", 12);
    char bytes[4];
    inet_pton(AF_INET, it->second.c_str(), bytes);
    r += std::string(bytes, 4);
  }
  return r;
}

std::string StartNameServer() {
  UniqueFd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(53);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return Errno("bind :53");
  std::thread([fd = s.release()] {
    for (;;) {
      char buf[512];
      sockaddr_storage from;
      socklen_t len = sizeof from;
      const ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) continue;
      const std::string r = Answer(buf, static_cast<size_t>(n));
      if (!r.empty()) sendto(fd, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }).detach();
  return "";
}

// Entered before any test, while the process has one thread (unshare of a user namespace
// needs that).
class Namespaces : public ::testing::Environment {
 public:
  void SetUp() override {
    g_setup_error = EnterNamespaces();
    if (g_setup_error.empty()) g_setup_error = StartNameServer();
  }
};
[[maybe_unused]] const auto* const kNamespaces =
    ::testing::AddGlobalTestEnvironment(new Namespaces);

#define REQUIRE_NAMESPACES() \
  if (!g_setup_error.empty()) GTEST_SKIP() << g_setup_error

std::vector<std::string> TakeQueries() {
  std::lock_guard<std::mutex> lock(g_mu);
  return std::exchange(g_queries, {});
}

Got AskOne(BrokerEnd& b, uint32_t id, const std::string& host, uint16_t port, bool local) {
  b.Ask(To(id, host, port, local));
  return b.Receive();
}

TEST(EgressResolverTest, ADeclaredNameIsLookedUpAsItIsWhateverTheSearchList) {
  REQUIRE_NAMESPACES();
  LocalPort host = LocalPort::Open(true, 16, "127.0.0.2");
  LocalPort trap = LocalPort::Open(true, 16, "127.0.0.3", host.port);
  auto helper = Helper::Connected();
  TakeQueries();
  uint32_t id = 1;
  for (const char* name : {"vault", "api.example.test"}) {
    Got got = AskOne(helper->broker(), id++, name, host.port, true);
    ASSERT_TRUE(got.answer.has_value()) << name;
    ASSERT_EQ(got.answer->error, 0) << name << ": " << strerror(got.answer->error);
    EXPECT_EQ(AddressText(*got.answer), "127.0.0.2") << name;
    EXPECT_TRUE(host.Accept().valid()) << name;
  }
  EXPECT_FALSE(trap.Accept(0).valid()) << "a search-list name was connected";
  const std::vector<std::string> queries = TakeQueries();
  EXPECT_FALSE(queries.empty()) << "the names did not go through the test's name server";
  for (const std::string& q : queries) EXPECT_TRUE(q == "vault" || q == "api.example.test") << q;
}

TEST(EgressResolverTest, ANameThatResolvesToALocalAddressIsRefusedWithoutTheFlag) {
  REQUIRE_NAMESPACES();
  LocalPort host = LocalPort::Open(true);
  auto helper = Helper::Connected();
  Got refused = AskOne(helper->broker(), 3, "loopback.example.test", host.port, false);
  ASSERT_TRUE(refused.answer.has_value());
  EXPECT_EQ(refused.answer->error, EACCES) << strerror(refused.answer->error);
  EXPECT_FALSE(host.Accept(200).valid());
  Got got = AskOne(helper->broker(), 4, "loopback.example.test", host.port, true);
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->error, 0) << strerror(got.answer->error);
}

// A declared name whose DNS points at the host's LAN address would reach its services.
TEST(EgressResolverTest, TheHostsOwnAddressIsRefusedByNameAndAsALiteral) {
  REQUIRE_NAMESPACES();
  LocalPort host = LocalPort::Open(true, 16, kHostLan);
  auto helper = Helper::Connected();
  uint32_t id = 1;
  for (const char* target : {"lan.example.test", kHostLan}) {
    Got refused = AskOne(helper->broker(), id++, target, host.port, false);
    ASSERT_TRUE(refused.answer.has_value()) << target;
    EXPECT_EQ(refused.answer->error, EACCES) << target << ": " << strerror(refused.answer->error);
    EXPECT_EQ(AddressText(*refused.answer), kHostLan) << "the refused address is named";
    EXPECT_FALSE(host.Accept(200).valid()) << target << " reached the host's own service";
  }
  Got got = AskOne(helper->broker(), id++, "lan.example.test", host.port, true);
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->error, 0) << "allowed local addresses reach it";
}

// SKILL_MCP_EGRESS_LOCAL=on is for the operator's services: a declared name pointed at
// the metadata service is still refused; the operator's own pin (a literal) reaches it.
TEST(EgressResolverTest, ANameLeadsToNoMetadataServiceEvenWithLocalAddressesAllowed) {
  REQUIRE_NAMESPACES();
  LocalPort service = LocalPort::Open(true, 16, kMetadata);
  auto helper = Helper::Connected();
  Got refused = AskOne(helper->broker(), 1, "metadata.example.test", service.port, true);
  ASSERT_TRUE(refused.answer.has_value());
  EXPECT_EQ(refused.answer->error, EACCES) << strerror(refused.answer->error);
  EXPECT_EQ(AddressText(*refused.answer), kMetadata) << "the refused address is named";
  EXPECT_FALSE(service.Accept(200).valid()) << "a name reached the metadata service";
  Got pinned = AskOne(helper->broker(), 2, kMetadata, service.port, true);
  ASSERT_TRUE(pinned.answer.has_value());
  EXPECT_EQ(pinned.answer->error, 0) << strerror(pinned.answer->error);
  EXPECT_TRUE(service.Accept().valid()) << "the pinned address did not connect";
  Got local = AskOne(helper->broker(), 3, "loopback.example.test", service.port, true);
  ASSERT_TRUE(local.answer.has_value());
  EXPECT_NE(local.answer->error, EACCES) << "a loopback name is still allowed";
}

TEST(EgressResolverTest, AStalledNameServerIsAnsweredAtTheRequestDeadline) {
  REQUIRE_NAMESPACES();
  auto helper = Helper::Connected({"--request-timeout-ms", "800"});
  BrokerEnd& b = helper->broker();
  const int64_t t0 = NowMs();
  for (uint32_t id = 1; id <= kPerBroker; ++id)
    b.Ask(To(id, "stall" + std::to_string(id) + ".example.test", 443, true));
  std::set<uint32_t> ids;
  for (size_t i = 0; i < kPerBroker; ++i) {
    Got got = b.Receive(5000);
    ASSERT_FALSE(got.timed_out) << "no answer while the name server says nothing";
    ASSERT_TRUE(got.answer.has_value());
    EXPECT_EQ(got.answer->error, ETIMEDOUT) << strerror(got.answer->error);
    EXPECT_EQ(got.answer->family, 0) << "no address was tried";
    ids.insert(got.answer->id);
  }
  EXPECT_EQ(ids.size(), kPerBroker);
  EXPECT_GE(NowMs() - t0, 700);
  EXPECT_LT(NowMs() - t0, 4000);
  // Their resolver threads still run, so their places stay taken until they return.
  const int64_t t1 = NowMs();
  b.Ask(To(99, "vault", 443, true));
  Got over = b.Receive(1000);
  ASSERT_TRUE(over.answer.has_value());
  EXPECT_EQ(over.answer->error, EAGAIN) << strerror(over.answer->error);
  EXPECT_LT(NowMs() - t1, 1000);
}

// The case the share is for: one broker's runs declare a name whose server stalls; the
// other brokers of a shared helper are served as if it were not there.
TEST(EgressResolverTest, AStalledNameServerFillsOnlyItsBrokersShare) {
  REQUIRE_NAMESPACES();
  const std::string path = "/tmp/skill-mcp-egress-test-r" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  LocalPort host = LocalPort::Open(true, 16, "127.0.0.2");
  auto helper = Helper::Activated(path);
  BrokerEnd stalled = helper->Connect();
  BrokerEnd other = helper->Connect();
  const int64_t t0 = NowMs();
  for (uint32_t id = 1; id <= kInFlight; ++id)
    stalled.Ask(To(id, "stall" + std::to_string(id) + ".example.test", 443, true));
  for (size_t i = kPerBroker; i < kInFlight; ++i) {
    Got got = stalled.Receive(2000);
    ASSERT_TRUE(got.answer.has_value()) << "request " << i + 1 << " was taken in";
    EXPECT_GT(got.answer->id, kPerBroker);
    EXPECT_EQ(got.answer->error, EAGAIN) << strerror(got.answer->error);
  }
  Got got = AskOne(other, 500, "vault", host.port, true);
  ASSERT_TRUE(got.answer.has_value());
  EXPECT_EQ(got.answer->error, 0) << strerror(got.answer->error);
  EXPECT_LT(NowMs() - t0, 3000);
  EXPECT_TRUE(stalled.Receive(0).timed_out) << "a stalled name was answered";
}

}  // namespace
}  // namespace skillmcp::egress_test
