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

}  // namespace
}  // namespace skillmcp
