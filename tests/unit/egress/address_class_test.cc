#include "egress/address_class.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

namespace skillmcp::egress {
namespace {

struct Row {
  const char* address;
  AddressClass expected;
};

// Every rule of address_class.cc, with the edges of each range on both sides.
const Row kTable[] = {
    // IPv4
    {"0.0.0.0", AddressClass::kUnspecified},
    {"0.0.0.1", AddressClass::kThisNetwork},
    {"0.255.255.255", AddressClass::kThisNetwork},
    {"1.0.0.0", AddressClass::kGlobal},
    {"126.255.255.255", AddressClass::kGlobal},
    {"127.0.0.0", AddressClass::kLoopback},
    {"127.0.0.1", AddressClass::kLoopback},
    {"127.77.0.1", AddressClass::kLoopback},
    {"127.255.255.255", AddressClass::kLoopback},
    {"128.0.0.0", AddressClass::kGlobal},
    {"169.253.255.255", AddressClass::kGlobal},
    {"169.254.0.0", AddressClass::kLinkLocal},
    {"169.254.169.254", AddressClass::kLinkLocal},
    {"169.254.255.255", AddressClass::kLinkLocal},
    {"169.255.0.0", AddressClass::kGlobal},
    {"223.255.255.255", AddressClass::kGlobal},
    {"224.0.0.0", AddressClass::kMulticast},
    {"239.255.255.250", AddressClass::kMulticast},
    {"240.0.0.0", AddressClass::kGlobal},
    {"255.255.255.254", AddressClass::kGlobal},
    {"255.255.255.255", AddressClass::kBroadcast},
    // private ranges stay reachable: an operator's internal APIs live there
    {"10.0.0.1", AddressClass::kGlobal},
    {"172.16.0.1", AddressClass::kGlobal},
    {"172.31.255.255", AddressClass::kGlobal},
    {"192.168.1.1", AddressClass::kGlobal},
    {"100.64.0.1", AddressClass::kGlobal},
    {"93.184.216.34", AddressClass::kGlobal},
    // IPv6
    {"::", AddressClass::kUnspecified},
    {"::1", AddressClass::kLoopback},
    {"::2", AddressClass::kThisNetwork},  // IPv4-compatible 0.0.0.2
    {"fe80::", AddressClass::kLinkLocal},
    {"fe80::1", AddressClass::kLinkLocal},
    {"febf:ffff::1", AddressClass::kLinkLocal},
    {"fec0::1", AddressClass::kGlobal},
    {"fe7f::1", AddressClass::kGlobal},
    {"ff02::1", AddressClass::kMulticast},
    {"ff00::", AddressClass::kMulticast},
    {"fc00::1", AddressClass::kGlobal},
    {"fd12:3456::1", AddressClass::kGlobal},
    {"2001:db8::1", AddressClass::kGlobal},
    {"2606:4700::1111", AddressClass::kGlobal},
    // IPv4-mapped: what they carry
    {"::ffff:127.0.0.1", AddressClass::kLoopback},
    {"::ffff:169.254.169.254", AddressClass::kLinkLocal},
    {"::ffff:0.0.0.0", AddressClass::kUnspecified},
    {"::ffff:0.1.2.3", AddressClass::kThisNetwork},
    {"::ffff:224.0.0.1", AddressClass::kMulticast},
    {"::ffff:255.255.255.255", AddressClass::kBroadcast},
    {"::ffff:10.0.0.1", AddressClass::kGlobal},
    {"::ffff:93.184.216.34", AddressClass::kGlobal},
    {"::fffe:127.0.0.1", AddressClass::kGlobal},  // not the mapped prefix
    // IPv4-compatible (deprecated, still routed by some stacks)
    {"::127.0.0.1", AddressClass::kLoopback},
    {"::169.254.169.254", AddressClass::kLinkLocal},
    {"::93.184.216.34", AddressClass::kGlobal},
    // NAT64 well-known prefix 64:ff9b::/96
    {"64:ff9b::127.0.0.1", AddressClass::kLoopback},
    {"64:ff9b::169.254.169.254", AddressClass::kLinkLocal},
    {"64:ff9b::0.0.0.0", AddressClass::kUnspecified},
    {"64:ff9b::93.184.216.34", AddressClass::kGlobal},
    {"64:ff9b:0:0:0:1:7f00:1", AddressClass::kGlobal},  // outside the /96
    {"64:ff9a::127.0.0.1", AddressClass::kGlobal},
};

std::array<uint8_t, 16> Bytes(const char* text, uint8_t& family) {
  std::array<uint8_t, 16> out{};
  if (inet_pton(AF_INET, text, out.data()) == 1) {
    family = AF_INET;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, text, out.data()), 1) << text;
    family = AF_INET6;
  }
  return out;
}

TEST(AddressClassTest, TheTable) {
  for (const Row& row : kTable) {
    uint8_t family = 0;
    const std::array<uint8_t, 16> bytes = Bytes(row.address, family);
    EXPECT_EQ(ClassifyAddress(family, bytes), row.expected)
        << row.address << " is " << AddressClassName(ClassifyAddress(family, bytes))
        << ", expected " << AddressClassName(row.expected);
  }
}

TEST(AddressClassTest, AnUnknownFamilyIsNeverGlobal) {
  std::array<uint8_t, 16> bytes{};
  bytes[0] = 93;
  EXPECT_EQ(ClassifyAddress(AF_UNIX, bytes), AddressClass::kUnspecified);
  EXPECT_EQ(ClassifyAddress(0, bytes), AddressClass::kUnspecified);
}

}  // namespace
}  // namespace skillmcp::egress
