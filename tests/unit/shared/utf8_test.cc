// IsValidUtf8's 16-byte ASCII skip against nlohmann's strict serialiser, which throws on
// any string that is not valid UTF-8: a bad or multi-byte sequence at every offset around
// the 16-byte windows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shared/utf8.h"

namespace skillmcp {
namespace {

bool OracleValid(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

TEST(Utf8, EverySequenceAtEveryOffsetAgreesWithTheOracle) {
  const std::vector<std::string> seqs = {
      "\xc3\xa9",         "\xe2\x9c\x93",     "\xf0\x9f\x98\x80", "\xff",
      "\xc3",             "\xe2\x9c",         "\xed\xa0\x80",     "\xc0\xaf",
      "\xf4\x90\x80\x80", "\x80",             "\xf0\x9f\x98",     "\xe0\x80\xaf"};
  for (const std::string& seq : seqs) {
    for (size_t at = 0; at < 40; ++at) {
      for (size_t tail : {0, 1, 17}) {
        std::string s = std::string(at, 'a') + seq + std::string(tail, 'b');
        EXPECT_EQ(IsValidUtf8(s), OracleValid(s)) << at << " " << tail;
      }
    }
  }
}

TEST(Utf8, LongAsciiAndAnErrorFarIn) {
  std::string s(100000, 'x');
  EXPECT_TRUE(IsValidUtf8(s));
  s[99999] = static_cast<char>(0x80);
  EXPECT_FALSE(IsValidUtf8(s));
}

TEST(Utf8SequenceLength, AWholeCharacterOrNothing) {
  EXPECT_EQ(Utf8SequenceLength("a\xc3\xa9", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("a\xc3\xa9", 1), 2u);
  EXPECT_EQ(Utf8SequenceLength("\xe2\x9c\x93", 0), 3u);
  EXPECT_EQ(Utf8SequenceLength("x\xf0\x9f\x98\x80", 1), 4u);
  EXPECT_EQ(Utf8SequenceLength("\xe2\x9c\x93", 1), 0u);      // a continuation byte
  EXPECT_EQ(Utf8SequenceLength("\xe2\x9c", 0), 0u);          // cut by the end
  EXPECT_EQ(Utf8SequenceLength("\xe2\x9cx", 0), 0u);         // cut by another character
  EXPECT_EQ(Utf8SequenceLength("\xc0\xaf", 0), 0u);          // overlong
  EXPECT_EQ(Utf8SequenceLength("\xe0\x80\xaf", 0), 0u);      // overlong
  EXPECT_EQ(Utf8SequenceLength("\xed\xa0\x80", 0), 0u);      // a surrogate
  EXPECT_EQ(Utf8SequenceLength("\xf4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xff", 0), 0u);
}

// The length agrees with IsValidUtf8 on the same bytes, for every lead and second byte.
TEST(Utf8SequenceLength, AgreesWithIsValidUtf8) {
  for (int b0 = 0x80; b0 <= 0xFF; ++b0) {
    for (int b1 = 0; b1 <= 0xFF; ++b1) {
      const std::string s = {static_cast<char>(b0), static_cast<char>(b1), '\x80', '\x80'};
      const size_t n = Utf8SequenceLength(s, 0);
      ASSERT_LE(n, 4u);
      if (n > 0) {
        EXPECT_TRUE(IsValidUtf8(s.substr(0, n))) << b0 << " " << b1;
      }
      for (size_t k = 1; k <= 4; ++k) {
        if (k != n) {
          EXPECT_FALSE(IsValidUtf8(s.substr(0, k))) << b0 << " " << b1 << " " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace skillmcp
