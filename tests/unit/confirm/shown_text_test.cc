// A prompt that cannot lie (broker/confirm/shown_text.h): every character class an
// argument could use to draw, hide or reorder text is shown escaped.
#include "broker/confirm/shown_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace skillmcp {
namespace {

struct Case {
  const char* what;
  std::string raw;
  std::string shown;
};

TEST(ShowUntrusted, EveryHiddenClassIsEscaped) {
  const Case cases[] = {
      {"line separator", "a\u2028b", "a\\u2028b"},
      {"paragraph separator", "a\u2029b", "a\\u2029b"},
      {"NEL (C1)", "a\u0085b", "a\\u0085b"},
      {"CSI (C1)", "a\u009b31mb", "a\\u009b31mb"},
      {"ESC (C0)", "a\x1b[2Jb", "a\\u001b[2Jb"},
      {"newline", "a\nb", "a\\nb"},
      {"carriage return", "a\rb", "a\\rb"},
      {"tab", "a\tb", "a\\tb"},
      {"DEL",
       "a\x7f"
       "b",
       "a\\u007fb"},
      {"right-to-left override", "a\u202eb", "a\\u202eb"},
      {"left-to-right embedding", "a\u202ab", "a\\u202ab"},
      {"first strong isolate", "a\u2068b", "a\\u2068b"},
      {"pop directional isolate", "a\u2069b", "a\\u2069b"},
      {"right-to-left mark", "a\u200fb", "a\\u200fb"},
      {"arabic letter mark", "a\u061cb", "a\\u061cb"},
      {"zero-width space", "a\u200bb", "a\\u200bb"},
      {"zero-width joiner", "a\u200db", "a\\u200db"},
      {"byte order mark", "a\ufeffb", "a\\ufeffb"},
      {"soft hyphen", "a\u00adb", "a\\u00adb"},
      {"tag character", "a\U000E0041b", "a\\u{e0041}b"},
      {"hangul filler", "a\u3164b", "a\\u3164b"},
      {"variation selector", "a\ufe0fb", "a\\ufe0fb"},
      {"no-break space", "a\u00a0b", "a\\u00a0b"},
      {"ideographic space", "a\u3000b", "a\\u3000b"},
      {"private use", "a\ue000b", "a\\ue000b"},
      {"noncharacter", "a\ufffeb", "a\\ufffeb"},
      {"leading combining mark", "\u0338a", "\\u0338a"},
      {"backslash", "a\\u2028b", "a\\\\u2028b"},
      {"double quote", "a\"b", "a\\\"b"},
      {"invalid byte",
       "a\xff"
       "b",
       "a\\xffb"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShowUntrusted(c.raw), c.shown) << c.what;
  }
}

TEST(ShowUntrusted, OrdinaryTextIsShownAsItIs) {
  EXPECT_EQ(ShowUntrusted("--city Lisboa, São Paulo 東京 é"), "--city Lisboa, São Paulo 東京 é");
  EXPECT_EQ(ShowUntrusted("e\u0301"), "e\u0301");  // a mark on a letter of the value
}

TEST(ShowUntrusted, ALongValueIsCutWithItsRealLength) {
  std::string value(5000, 'x');
  value += "\u2028Time limit: 1 s";
  const std::string shown = ShowUntrusted(value, 200);
  EXPECT_EQ(shown.rfind(std::string(200, 'x'), 0), 0u);
  EXPECT_NE(shown.find("[cut: 5016 characters, 5018 bytes in all]"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("Time limit"), std::string::npos);
  EXPECT_EQ(ShowUntrusted(std::string(200, 'y'), 200), std::string(200, 'y'));  // no cut
}

// A run of spaces could wrap a forged line into view, a quote look-alike could fake the end
// of the value, and a stack of combining marks could draw over neighbouring lines.
TEST(ShowUntrusted, LineForgingTricksAreVisible) {
  EXPECT_EQ(ShowUntrusted("a  b"), "a \\u0020b");
  EXPECT_EQ(ShowUntrusted("a   b"), "a \\u0020\\u0020b");
  EXPECT_EQ(ShowUntrusted("a b c"), "a b c");
  EXPECT_EQ(ShowUntrusted("x\uFF02 y"), "x\\uff02 y");
  EXPECT_EQ(ShowUntrusted("\u201Cq\u201D"), "\\u201cq\\u201d");
  EXPECT_EQ(ShowUntrusted("x\u2033"), "x\\u2033");
  // Two marks on a letter stay (they spell real text); the third and later are escaped.
  EXPECT_EQ(ShowUntrusted("a\u0346\u0346\u0346\u0346"), "a\u0346\u0346\\u0346\\u0346");
  // A mark right after an escape would sit on the escape's last letter.
  EXPECT_EQ(ShowUntrusted("\"\u0301"), "\\\"\\u0301");
}

TEST(EscapeHiddenInJson, SameValuesVisibleText) {
  nlohmann::ordered_json j;
  j["argv"] = {"a\u2028b", "c\u202ed", "\U000E0041", "plain é"};
  const std::string raw = j.dump(2);
  const std::string shown = EscapeHiddenInJson(raw);
  EXPECT_EQ(nlohmann::ordered_json::parse(shown), j);
  EXPECT_EQ(shown.find("\u2028"), std::string::npos);
  EXPECT_EQ(shown.find("\u202e"), std::string::npos);
  EXPECT_NE(shown.find("a\\u2028b"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\\udb40\\udc41"), std::string::npos) << shown;  // a surrogate pair
  EXPECT_NE(shown.find("plain é"), std::string::npos);
  EXPECT_NE(shown.find("\n  \"argv\""), std::string::npos) << "layout untouched";
}

}  // namespace
}  // namespace skillmcp
