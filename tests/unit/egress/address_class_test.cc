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
    {"93.184.216.34", AddressClass::kGlobal},
    // shared address space 100.64/10, and the IETF protocol block 192.0.0.0/24
    {"100.63.255.255", AddressClass::kGlobal},
    {"100.64.0.0", AddressClass::kSharedSpace},
    {"100.64.0.1", AddressClass::kSharedSpace},
    {"100.127.255.255", AddressClass::kSharedSpace},
    {"100.128.0.0", AddressClass::kGlobal},
    {"191.255.255.255", AddressClass::kGlobal},
    {"192.0.0.0", AddressClass::kIetfProtocol},
    {"192.0.0.192", AddressClass::kIetfProtocol},
    {"192.0.0.255", AddressClass::kIetfProtocol},
    {"192.0.1.0", AddressClass::kGlobal},
    // cloud metadata outside those ranges, and their neighbours
    {"100.100.100.200", AddressClass::kCloudMetadata},
    {"100.100.100.201", AddressClass::kSharedSpace},
    {"168.63.129.16", AddressClass::kCloudMetadata},
    {"168.63.129.15", AddressClass::kGlobal},
    {"168.63.129.17", AddressClass::kGlobal},
    {"fd00:ec2::254", AddressClass::kCloudMetadata},
    {"fd00:ec2::253", AddressClass::kGlobal},
    {"fd00:ec2:0:1::254", AddressClass::kGlobal},
    {"fd20:ce::254", AddressClass::kCloudMetadata},
    {"fd20:ce::255", AddressClass::kGlobal},
    {"::ffff:168.63.129.16", AddressClass::kCloudMetadata},
    {"64:ff9b::100.100.100.200", AddressClass::kCloudMetadata},
    {"::ffff:100.64.0.1", AddressClass::kSharedSpace},
    {"64:ff9b::192.0.0.170", AddressClass::kIetfProtocol},
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

AddressClass Classify(const char* text, const HostAddresses& host = {}) {
  uint8_t family = 0;
  const std::array<uint8_t, 16> bytes = Bytes(text, family);
  return ClassifyAddress(family, bytes, host);
}

TEST(AddressClassTest, TheTable) {
  for (const Row& row : kTable) {
    EXPECT_EQ(Classify(row.address), row.expected)
        << row.address << " is " << AddressClassName(Classify(row.address)) << ", expected "
        << AddressClassName(row.expected);
  }
}

IpAddress Ip(const char* text) {
  IpAddress ip;
  ip.bytes = Bytes(text, ip.family);
  return ip;
}

// A name pointed at the host's LAN address reaches its local services like loopback does.
TEST(AddressClassTest, TheHostsOwnAddressesAreRefusedInEveryForm) {
  const HostAddresses host = {Ip("127.0.0.1"), Ip("10.1.2.3"), Ip("2001:db8::7"),
                              Ip("198.51.100.7")};
  const Row rows[] = {
      {"10.1.2.3", AddressClass::kHostOwn},
      {"198.51.100.7", AddressClass::kHostOwn},
      {"2001:db8::7", AddressClass::kHostOwn},
      {"::ffff:10.1.2.3", AddressClass::kHostOwn},
      {"::10.1.2.3", AddressClass::kHostOwn},
      {"64:ff9b::198.51.100.7", AddressClass::kHostOwn},
      {"10.1.2.4", AddressClass::kGlobal},
      {"198.51.100.8", AddressClass::kGlobal},
      {"2001:db8::8", AddressClass::kGlobal},
      {"2001:db8::a01:203", AddressClass::kGlobal},  // 10.1.2.3's bytes, but not carried
      {"127.0.0.1", AddressClass::kLoopback},        // its own class first
  };
  for (const Row& row : rows) {
    EXPECT_EQ(Classify(row.address, host), row.expected)
        << row.address << " is " << AddressClassName(Classify(row.address, host)) << ", expected "
        << AddressClassName(row.expected);
  }
  // Without the host's addresses the same are global: the set is what refuses them.
  EXPECT_EQ(Classify("10.1.2.3"), AddressClass::kGlobal);
  EXPECT_EQ(Classify("2001:db8::7"), AddressClass::kGlobal);
}

TEST(AddressClassTest, AnUnknownFamilyIsNeverGlobal) {
  std::array<uint8_t, 16> bytes{};
  bytes[0] = 93;
  EXPECT_EQ(ClassifyAddress(AF_UNIX, bytes, {}), AddressClass::kUnspecified);
  EXPECT_EQ(ClassifyAddress(0, bytes, {}), AddressClass::kUnspecified);
}

// The classes no declared name may lead to even where local addresses are allowed.
TEST(AddressClassTest, MetadataServicesAreLinkLocalTheKnownAddressesAndTheIetfBlock) {
  for (const char* a : {"169.254.169.254", "169.254.170.2", "fe80::a9fe:a9fe", "fd00:ec2::254",
                        "100.100.100.200", "168.63.129.16", "192.0.0.192"})
    EXPECT_TRUE(IsMetadataService(Classify(a))) << a;
  for (const char* a : {"127.0.0.1", "::1", "10.0.0.1", "100.64.0.1", "93.184.216.34", "224.0.0.1"})
    EXPECT_FALSE(IsMetadataService(Classify(a))) << a;
}

}  // namespace
}  // namespace skillmcp::egress
