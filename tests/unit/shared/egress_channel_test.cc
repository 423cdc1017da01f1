#include "shared/egress_channel.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/unit/fuzz_corpus.h"

namespace skillmcp {
namespace {

template <typename T>
void RoundTripsFromMirror(const T& m) {
  std::optional<std::string> frame = EncodeEgressFromMirror(m);
  ASSERT_TRUE(frame.has_value());
  std::optional<EgressFromMirror> back = DecodeEgressFromMirror(*frame);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(std::get<T>(*back), m);
  // Every proper prefix and one trailing byte are refused.
  for (size_t n = 0; n < frame->size(); ++n)
    EXPECT_FALSE(DecodeEgressFromMirror(frame->substr(0, n)).has_value()) << n;
  EXPECT_FALSE(DecodeEgressFromMirror(*frame + "x").has_value());
  // A broker's frame type is not a mirror's.
  EXPECT_FALSE(DecodeEgressToMirror(*frame).has_value());
}

TEST(EgressChannelTest, MirrorFramesRoundTrip) {
  RoundTripsFromMirror(EgressConnect{7, "api.example.com", 443});
  RoundTripsFromMirror(EgressClosed{7, 1u << 31, 5000000000ull});
  RoundTripsFromMirror(EgressRefused{"dns", "evil.example", 0});
  RoundTripsFromMirror(EgressRefused{"tcp", "2001:db8::9", 22});
  RoundTripsFromMirror(EgressRefusedUntold{300});
}

TEST(EgressChannelTest, BrokerFramesRoundTrip) {
  for (EgressToMirror m : {EgressToMirror{EgressOpened{3}}, EgressToMirror{EgressDenied{3, 111}}}) {
    std::optional<std::string> frame = EncodeEgressToMirror(m);
    ASSERT_TRUE(frame.has_value());
    std::optional<EgressToMirror> back = DecodeEgressToMirror(*frame);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, m);
    EXPECT_FALSE(DecodeEgressFromMirror(*frame).has_value());
  }
}

TEST(EgressChannelTest, OutOfRangeValuesAreNeitherEncodedNorDecoded) {
  EXPECT_FALSE(EncodeEgressFromMirror(EgressConnect{1, "", 443}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressConnect{1, "API.example.com", 443}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressConnect{1, "a/b", 443}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressConnect{1, std::string(254, 'a'), 443}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressConnect{1, "a.com", 0}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressRefused{"icmp", "1.2.3.4", 0}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressRefused{"dns", "a.com", 53}).has_value());
  EXPECT_FALSE(EncodeEgressFromMirror(EgressRefusedUntold{0}).has_value());
  EXPECT_FALSE(EncodeEgressToMirror(EgressDenied{1, 0}).has_value());
  EXPECT_FALSE(EncodeEgressToMirror(EgressDenied{1, 4096}).has_value());
  // A valid frame altered: another version, an unknown type, a port over 65535.
  std::string frame = *EncodeEgressFromMirror(EgressConnect{1, "a.com", 443});
  std::string v = frame;
  v[4] = 2;
  EXPECT_FALSE(DecodeEgressFromMirror(v).has_value());
  std::string t = frame;
  t[8] = 9;
  EXPECT_FALSE(DecodeEgressFromMirror(t).has_value());
  std::string p = frame;
  p[p.size() - 2] = 1;  // port 443 + 65536
  EXPECT_FALSE(DecodeEgressFromMirror(p).has_value());
  EXPECT_FALSE(DecodeEgressFromMirror(std::string(600, 'S')).has_value());
}

// The egress_channel fuzz target's seeds, replayed with its invariants: exactly the
// seeds named for a frame decode, each in its one direction, and re-encode to themselves.
TEST(EgressChannelTest, TheFuzzCorpusDecodesAsItsNamesSay) {
  const std::map<std::string, std::string> seeds = ReadFuzzCorpus("egress_channel");
  std::set<std::string> from_mirror, to_mirror;
  for (const auto& [name, bytes] : seeds) {
    const std::optional<EgressFromMirror> from = DecodeEgressFromMirror(bytes);
    const std::optional<EgressToMirror> to = DecodeEgressToMirror(bytes);
    if (from) {
      from_mirror.insert(name);
      EXPECT_EQ(EncodeEgressFromMirror(*from).value_or(""), bytes) << name;
    }
    if (to) {
      to_mirror.insert(name);
      EXPECT_EQ(EncodeEgressToMirror(*to).value_or(""), bytes) << name;
    }
  }
  EXPECT_GE(seeds.size(), 20u);
  EXPECT_EQ(from_mirror,
            (std::set<std::string>{"closed", "connect", "connect-v6-literal", "refused-dns",
                                   "refused-tcp", "refused-udp", "refused-untold"}));
  EXPECT_EQ(to_mirror, (std::set<std::string>{"denied", "opened"}));
}

}  // namespace
}  // namespace skillmcp
