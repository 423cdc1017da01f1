#include "broker/confirm/shown_text.h"

#include <unicode/uchar.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include <cstdio>

#include "shared/lazy_icu.h"

namespace skillmcp {
namespace {

// ICU's general category of `c`, loaded on first use (shared/lazy_icu.h); callers ask only
// for c >= 0xA0 (ASCII and C1 are decided without it). Without ICU, U_UNASSIGNED: the
// character is escaped, which shows more, never less.
int8_t CharType(UChar32 c) {
  const lazy_icu::Api* icu = lazy_icu::Get();
  return icu ? icu->u_charType(c) : static_cast<int8_t>(U_UNASSIGNED);
}

// A binary property of `c` (c >= 0xA0); without ICU, true: escaped (see CharType).
bool HasProperty(UChar32 c, UProperty which) {
  const lazy_icu::Api* icu = lazy_icu::Get();
  return icu ? icu->u_hasBinaryProperty(c, which) : true;
}

std::string Hex(unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%0*x", digits, value);
  return buffer;
}

// The visible spelling of one hidden code point.
std::string Escaped(UChar32 c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (c <= 0xFFFF) return "\\u" + Hex(static_cast<unsigned>(c), 4);
  return "\\u{" + Hex(static_cast<unsigned>(c), 5) + "}";
}

bool IsCombiningMark(UChar32 c) {
  if (c < 0xA0) return false;  // no ASCII or C1 character is a mark
  const int8_t type = CharType(c);
  return type == U_NON_SPACING_MARK || type == U_ENCLOSING_MARK || type == U_COMBINING_SPACING_MARK;
}

}  // namespace

bool IsHiddenCodePoint(int code_point) {
  const UChar32 c = code_point;
  if (c == ' ') return false;
  if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) return true;  // C0, DEL, C1 (NEL, CSI...)
  // The rest of ASCII is letters, digits, punctuation and symbols: none hidden (and ICU
  // stays unloaded for ASCII text).
  if (c < 0x7F) return false;
  switch (CharType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:          // bidi marks, embeddings, overrides, isolates; ZW*; tags
    case U_LINE_SEPARATOR:       // U+2028
    case U_PARAGRAPH_SEPARATOR:  // U+2029
    case U_SPACE_SEPARATOR:      // NBSP, em space...: can fake alignment
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
    case U_UNASSIGNED:  // includes the noncharacters
      return true;
    default:
      break;
  }
  // Hangul fillers, variation selectors, the combining grapheme joiner: drawn as nothing.
  return HasProperty(c, UCHAR_DEFAULT_IGNORABLE_CODE_POINT) ||
         HasProperty(c, UCHAR_BIDI_CONTROL);
}

// Combining marks shown on one base character before the rest are escaped.
constexpr int kMaxMarksShown = 2;

// Characters a reader takes for the ASCII double quote that delimits each value.
bool LooksLikeQuote(UChar32 c) {
  if (c < 0x80) return false;
  switch (c) {
    case 0x02BA: case 0x02DD: case 0x02EE: case 0x05F4: case 0x2033: case 0x2036:
    case 0x3003: case 0xFF02:
      return true;
    default:
      return c >= 0xA0 && HasProperty(c, UCHAR_QUOTATION_MARK);
  }
}

std::string ShowUntrusted(std::string_view value, size_t max_chars) {
  std::string out;
  const auto* s = reinterpret_cast<const uint8_t*>(value.data());
  const int32_t length = static_cast<int32_t>(value.size());
  int32_t i = 0;
  size_t chars = 0;
  size_t cut_at = std::string::npos;  // byte offset in `out` where the cut lands
  bool prev_space = false;
  bool prev_escaped = false;
  int marks_in_row = 0;
  while (i < length) {
    const int32_t start = i;
    UChar32 c = 0;
    U8_NEXT(s, i, length, c);
    if (chars == max_chars) cut_at = out.size();
    ++chars;
    if (cut_at != std::string::npos) continue;  // only counting now
    const bool mark = c >= 0 && IsCombiningMark(c);
    marks_in_row = mark ? marks_in_row + 1 : 0;
    bool escaped = true;
    if (c < 0) {
      for (int32_t k = start; k < i; ++k) out += "\\x" + Hex(s[k], 2);
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (IsHiddenCodePoint(c) || (c == ' ' && prev_space) || LooksLikeQuote(c) ||
               (mark && (start == 0 || prev_escaped || marks_in_row > kMaxMarksShown))) {
      // Why: a run of spaces can push text onto what looks like a line of its own when the
      // client wraps; a quote look-alike can fake the end of the value; a leading mark
      // would combine with the quote the prompt puts before it, one after an escape with
      // the escape's last letter, and a stack of marks can draw over neighbouring lines.
      out += Escaped(c);
    } else {
      out.append(value.substr(static_cast<size_t>(start), static_cast<size_t>(i - start)));
      escaped = false;
    }
    prev_space = c == ' ';
    prev_escaped = escaped;
  }
  if (cut_at != std::string::npos) {
    out += " \u2026 [cut: " + std::to_string(chars) + " characters, " +
           std::to_string(value.size()) + " bytes in all]";
  }
  return out;
}

std::string EscapeHiddenInJson(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size());
  const auto* s = reinterpret_cast<const uint8_t*>(json_text.data());
  const int32_t length = static_cast<int32_t>(json_text.size());
  int32_t i = 0;
  while (i < length) {
    const int32_t start = i;
    UChar32 c = 0;
    U8_NEXT(s, i, length, c);
    // Outside strings JSON text is printable ASCII, so a hidden character is always inside
    // a string, where \uXXXX means the same character.
    if (c >= 0x7F && IsHiddenCodePoint(c)) {
      if (c <= 0xFFFF) {
        out += "\\u" + Hex(static_cast<unsigned>(c), 4);
      } else {
        out += "\\u" + Hex(U16_LEAD(c), 4) + "\\u" + Hex(U16_TRAIL(c), 4);
      }
    } else {
      out.append(json_text.substr(static_cast<size_t>(start), static_cast<size_t>(i - start)));
    }
  }
  return out;
}

}  // namespace skillmcp
