// CollateCompare's ASCII path (a table, so that ICU stays unloaded for ASCII trees)
// against ICU's root collator itself, linked into this test: every pair of strings of
// up to two ASCII characters, and random longer ones.
#include <gtest/gtest.h>
#include <unicode/ucol.h>

#include <random>
#include <string>
#include <vector>

#include "broker/catalogue/collate.h"
#include "shared/lazy_icu.h"

namespace skillmcp {
namespace {

// What CollateCompare answers, computed with ICU: tertiary strength (localeCompare's),
// then bytes.
class IcuReference {
 public:
  IcuReference() {
    UErrorCode status = U_ZERO_ERROR;
    c_ = ucol_open("", &status);
    EXPECT_TRUE(U_SUCCESS(status));
    ucol_setStrength(c_, UCOL_TERTIARY);
  }
  ~IcuReference() { ucol_close(c_); }
  int Compare(const std::string& a, const std::string& b) const {
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult r = ucol_strcollUTF8(c_, a.data(), static_cast<int32_t>(a.size()), b.data(),
                                          static_cast<int32_t>(b.size()), &status);
    if (r != UCOL_EQUAL) return r == UCOL_LESS ? -1 : 1;
    int bytes = a.compare(b);
    return bytes < 0 ? -1 : (bytes > 0 ? 1 : 0);
  }

 private:
  UCollator* c_ = nullptr;
};

TEST(CollateAscii, EveryStringOfUpToTwoCharactersOrdersAsIcu) {
  IcuReference icu;
  std::vector<std::string> all = {""};
  for (int x = 0; x < 128; ++x) {
    all.push_back(std::string(1, static_cast<char>(x)));
    for (int y = 0; y < 128; ++y)
      all.push_back(std::string{static_cast<char>(x), static_cast<char>(y)});
  }
  // Every string against the single characters and the empty string, and a stride
  // through all pairs (16k x 16k would be 270 M comparisons).
  size_t checked = 0, wrong = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < 129; ++j) {
      ++checked;
      if (CollateCompare(all[i], all[j]) != icu.Compare(all[i], all[j]) && ++wrong < 10)
        ADD_FAILURE() << "\"" << all[i] << "\" vs \"" << all[j] << "\"";
    }
    for (size_t j = i % 97; j < all.size(); j += 97) {
      ++checked;
      if (CollateCompare(all[i], all[j]) != icu.Compare(all[i], all[j]) && ++wrong < 10)
        ADD_FAILURE() << "\"" << all[i] << "\" vs \"" << all[j] << "\"";
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << checked;
}

TEST(CollateAscii, RandomPathsOrderAsIcu) {
  IcuReference icu;
  std::mt19937 rng(11);
  // Mostly the characters of file names, with controls and symbols mixed in.
  const std::string alphabet = "aAbBzZ09_-./ ~!#$%&'()*+,;=@[]^`{}|\\\"\t\n\x01\x1f\x7f";
  auto make = [&] {
    std::string s(rng() % 12, ' ');
    for (char& ch : s) ch = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int k = 0; k < 200000; ++k) {
    std::string a = make(), b = make();
    if (rng() % 4 == 0) b = a.substr(0, a.size() / 2) + b;  // shared prefixes
    ASSERT_EQ(CollateCompare(a, b), icu.Compare(a, b)) << "\"" << a << "\" vs \"" << b << "\"";
  }
}

}  // namespace
}  // namespace skillmcp
