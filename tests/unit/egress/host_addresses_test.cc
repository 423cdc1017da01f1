#include "egress/host_addresses.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include "egress/dial.h"

namespace skillmcp::egress {
namespace {

IpAddress V4(const char* text) {
  IpAddress ip{AF_INET, {}};
  EXPECT_EQ(inet_pton(AF_INET, text, ip.bytes.data()), 1) << text;
  return ip;
}

// The real reading: this host's loopback address is among them, stored as the classifier
// looks it up (IPv4 in the first 4 bytes, the rest zero).
TEST(HostAddressesTest, TheRealReadingHasLoopback) {
  std::optional<HostAddresses> read = ReadHostAddresses();
  ASSERT_TRUE(read.has_value()) << strerror(errno);
  EXPECT_EQ(read->count(V4("127.0.0.1")), 1u);
}

// The cache around a reader that counts its calls: the reader is the only I/O, what is
// tested is when it is called and what a failed reading gives.
struct Counting {
  int calls = 0;
  std::optional<HostAddresses> next = HostAddresses{};
  HostAddressCache::Reader Reader() {
    return [this] {
      ++calls;
      return next;
    };
  }
};

TEST(HostAddressesTest, ReadAtMostOnceASecond) {
  Counting c;
  c.next = HostAddresses{V4("10.0.0.1")};
  HostAddressCache cache(c.Reader());
  ASSERT_NE(cache.Get(5000), nullptr);
  EXPECT_EQ(cache.Get(5000)->count(V4("10.0.0.1")), 1u);
  cache.Get(5999);
  EXPECT_EQ(c.calls, 1);
  c.next = HostAddresses{V4("10.0.0.2")};  // an address came up meanwhile
  EXPECT_EQ(cache.Get(5999)->count(V4("10.0.0.2")), 0u) << "read again within the second";
  EXPECT_EQ(cache.Get(6000)->count(V4("10.0.0.2")), 1u) << "not read again after it";
  EXPECT_EQ(c.calls, 2);
}

TEST(HostAddressesTest, AFailedReadingIsNothingNotTheLastOne) {
  Counting c;
  c.next = HostAddresses{V4("10.0.0.1")};
  HostAddressCache cache(c.Reader());
  ASSERT_NE(cache.Get(0), nullptr);
  c.next.reset();
  EXPECT_EQ(cache.Get(1000), nullptr) << "a stale set would miss an address added since";
  EXPECT_EQ(cache.Get(1500), nullptr) << "and a failure is not retried within the second";
  EXPECT_EQ(c.calls, 2);
  c.next = HostAddresses{};
  EXPECT_NE(cache.Get(2000), nullptr);
}

// Fail closed: when the host's addresses could not be read, any address could be one of
// them, so none is connected unless local ones are allowed.
TEST(HostAddressesTest, WithoutThemEveryAddressIsRefused) {
  Peer global{AF_INET, V4("198.51.100.7").bytes, 443};
  Dial unknown({global}, /*allow_local=*/false, /*pinned=*/false, nullptr, 5000, 1000000);
  EXPECT_FALSE(unknown.Advance(0));
  EXPECT_EQ(unknown.error(), EACCES);
  EXPECT_EQ(unknown.socket(), -1) << "a connect was attempted";
}

}  // namespace
}  // namespace skillmcp::egress
