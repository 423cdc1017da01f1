// Where ICU cannot be loaded (this binary is built with shared/lazy_icu.cc naming a
// library that does not exist), the confirmation text fails closed: every character
// from U+00A0 up is shown escaped, since nothing can say which are harmless; ASCII
// keeps its table path.
#include <gtest/gtest.h>

#include <string>

#include "broker/confirm/shown_text.h"
#include "shared/lazy_icu.h"

namespace skillmcp {
namespace {

TEST(NoIcu, NonAsciiIsEscapedWhenIcuCannotBeLoaded) {
  EXPECT_EQ(lazy_icu::Get(), nullptr) << "this binary must not find ICU";
  const std::string shown = ShowUntrusted("caf\xC3\xA9 \xE2\x80\xAE" "evil");  // é, U+202E
  EXPECT_EQ(shown.find("\xC3\xA9"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xE2\x80\xAE"), std::string::npos) << shown;
  EXPECT_NE(shown.find("caf"), std::string::npos) << shown;
  EXPECT_NE(shown.find("evil"), std::string::npos) << shown;
  EXPECT_EQ(ShowUntrusted("plain ascii"), "plain ascii");
}

}  // namespace
}  // namespace skillmcp
