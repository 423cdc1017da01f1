#include "broker/catalogue/collate.h"

#include <climits>
#include <memory>
#include <mutex>

#include "shared/lazy_icu.h"
#include "shared/log.h"

namespace skillmcp {
namespace {

struct CollatorCloser {
  void operator()(UCollator* c) const { lazy_icu::Get()->ucol_close(c); }
};

// The root collator at tertiary strength (what String.prototype.localeCompare uses), made once.
// Null when ICU cannot open it, in which case CollateCompare degrades to ASCII-case-folded byte
// order (still total and deterministic), with a warning.
UCollator* RootCollator() {
  static std::unique_ptr<UCollator, CollatorCloser> collator = [] {
    const lazy_icu::Api* icu = lazy_icu::Get();
    if (icu == nullptr) {
      LOG_WARN(
          "ICU root collator unavailable; listings of non-ASCII names fall back to byte "
          "order");
      return std::unique_ptr<UCollator, CollatorCloser>();
    }
    UErrorCode status = U_ZERO_ERROR;
    UCollator* c = icu->ucol_open("", &status);
    if (U_FAILURE(status) || c == nullptr) {
      LOG_WARN("ICU root collator unavailable (%s); listings fall back to byte order",
               icu->u_errorName(status));
      if (c != nullptr) icu->ucol_close(c);
      return std::unique_ptr<UCollator, CollatorCloser>();
    }
    icu->ucol_setStrength(c, UCOL_TERTIARY);
    return std::unique_ptr<UCollator, CollatorCloser>(c);
  }();
  return collator.get();
}

int ToInt32Len(size_t n) { return n > INT32_MAX ? INT32_MAX : static_cast<int>(n); }

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

int FoldedCompare(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    auto x = static_cast<unsigned char>(AsciiLower(a[i]));
    auto y = static_cast<unsigned char>(AsciiLower(b[i]));
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

// The root collator's primary order of the ASCII characters: 0 is ignorable (the C0
// controls but TAB, LF, VT, FF, CR; and DEL), then whitespace, punctuation and symbols,
// digits, letters (a letter's two cases equal). ASCII has no contraction or expansion
// there, so an ASCII string's primary key is the ranks of its characters without the
// zeros. tests/unit/catalogue/collate_ascii_test.cc checks every entry against ICU.
constexpr uint8_t kAsciiPrimary[128] = {
    0,  0,  0,  0,  0,  0,  0,  0,  0,  1,  2,  3,  4,  5,  0,  0,   // 0x00
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,   // 0x10
    6,  12, 16, 28, 38, 29, 27, 15, 17, 18, 24, 32, 9,  8,  14, 25,  // 0x20
    39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 11, 10, 33, 34, 35, 13,  // 0x30
    23, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,  // 0x40
    64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 19, 26, 20, 31, 7,   // 0x50
    30, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,  // 0x60
    64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 21, 36, 22, 37, 0,   // 0x70
};

bool IsAscii(std::string_view s) {
  for (char ch : s)
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  return true;
}

bool IsAsciiUpper(unsigned char c) { return c >= 'A' && c <= 'Z'; }

// The tertiary weight of an ASCII character that is not ignorable: an upper-case letter
// sorts after its lower-case form; every other character has the common weight.
char AsciiTertiary(unsigned char c) { return IsAsciiUpper(c) ? 2 : 1; }

// The tertiary comparison of two ASCII strings equal at the first level: the first
// non-ignorable position where one is an upper-case letter and the other is not.
int AsciiTertiaryCompare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a.size() && kAsciiPrimary[static_cast<unsigned char>(a[i])] == 0) ++i;
    while (j < b.size() && kAsciiPrimary[static_cast<unsigned char>(b[j])] == 0) ++j;
    if (i == a.size() || j == b.size()) return 0;
    const char x = AsciiTertiary(static_cast<unsigned char>(a[i++]));
    const char y = AsciiTertiary(static_cast<unsigned char>(b[j++]));
    if (x != y) return x < y ? -1 : 1;
  }
}

// The primary comparison of two ASCII strings, as the root collator makes it.
int AsciiPrimaryCompare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a.size() && kAsciiPrimary[static_cast<unsigned char>(a[i])] == 0) ++i;
    while (j < b.size() && kAsciiPrimary[static_cast<unsigned char>(b[j])] == 0) ++j;
    const bool a_done = i == a.size(), b_done = j == b.size();
    if (a_done || b_done) return a_done == b_done ? 0 : (a_done ? -1 : 1);
    const uint8_t x = kAsciiPrimary[static_cast<unsigned char>(a[i++])];
    const uint8_t y = kAsciiPrimary[static_cast<unsigned char>(b[j++])];
    if (x != y) return x < y ? -1 : 1;
  }
}

}  // namespace

bool AsciiCollationKey(std::string_view s, std::string* out) {
  if (!AsciiPrimaryKey(s, out)) return false;
  // The primary weights are never 0, so a 0 ends them: a shorter first level sorts first,
  // and equal first levels are decided by the case of each non-ignorable character.
  out->push_back('\0');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (kAsciiPrimary[c] != 0) out->push_back(AsciiTertiary(c));
  }
  return true;
}

bool AsciiPrimaryKey(std::string_view s, std::string* out) {
  const size_t start = out->size();
  out->resize(start + s.size());
  char* at = out->data() + start;
  unsigned char high = 0;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    high |= c;
    const uint8_t w = kAsciiPrimary[c & 0x7f];
    *at = static_cast<char>(w);
    at += w != 0;  // ignorables are written over by the next weight
  }
  out->resize(high & 0x80 ? start : static_cast<size_t>(at - out->data()));
  return (high & 0x80) == 0;
}

int CollateCompare(std::string_view a, std::string_view b) {
  int primary = 0;  // the collator's answer (all three levels); 0 on a tie
  if (IsAscii(a) && IsAscii(b)) {
    // why: ICU stays unloaded for ASCII trees (shared/lazy_icu.h); same order. ASCII has
    // no second-level differences, so the third (case) decides next.
    primary = AsciiPrimaryCompare(a, b);
    if (primary == 0) primary = AsciiTertiaryCompare(a, b);
  } else if (UCollator* c = RootCollator()) {
    // why the lock: the catalogue collates on several threads (scan.h), and ICU's C API
    // promises nothing about sharing one UCollator; the lock costs nothing beside a compare.
    static std::mutex icu_lock;
    std::lock_guard<std::mutex> hold(icu_lock);
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult r = lazy_icu::Get()->ucol_strcollUTF8(c, a.data(), ToInt32Len(a.size()),
                                                           b.data(), ToInt32Len(b.size()), &status);
    if (U_SUCCESS(status))
      primary = r == UCOL_LESS ? -1 : (r == UCOL_GREATER ? 1 : 0);
    else
      primary = FoldedCompare(a, b);
  } else {
    primary = FoldedCompare(a, b);
  }
  if (primary != 0) return primary;
  // Ties (strings differing only in ignorable characters) fall back to bytes, so the order
  // never depends on input order.
  int bytes = a.compare(b);
  return bytes < 0 ? -1 : (bytes > 0 ? 1 : 0);
}

void CollateSortStrings(std::vector<std::string>& items) {
  CollateSort(items, [](const std::string& s) -> std::string_view { return s; });
}

}  // namespace skillmcp
