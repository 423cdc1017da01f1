#include "broker/catalogue/collate.h"

#include <unicode/ucol.h>

#include <climits>
#include <memory>

#include "shared/log.h"

namespace skillmcp {
namespace {

struct CollatorCloser {
  void operator()(UCollator* c) const { ucol_close(c); }
};

// The root collator at primary strength, made once. Null when ICU cannot open it, in
// which case CollateCompare degrades to ASCII-case-folded byte order (still total and
// deterministic), with a warning.
UCollator* RootPrimaryCollator() {
  static std::unique_ptr<UCollator, CollatorCloser> collator = [] {
    UErrorCode status = U_ZERO_ERROR;
    UCollator* c = ucol_open("", &status);
    if (U_FAILURE(status) || c == nullptr) {
      LOG_WARN("ICU root collator unavailable (%s); listings fall back to byte order",
               u_errorName(status));
      if (c != nullptr) ucol_close(c);
      return std::unique_ptr<UCollator, CollatorCloser>();
    }
    ucol_setStrength(c, UCOL_PRIMARY);
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

}  // namespace

int CollateCompare(std::string_view a, std::string_view b) {
  int primary = 0;
  if (UCollator* c = RootPrimaryCollator()) {
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult r = ucol_strcollUTF8(c, a.data(), ToInt32Len(a.size()), b.data(),
                                          ToInt32Len(b.size()), &status);
    if (U_SUCCESS(status))
      primary = r == UCOL_LESS ? -1 : (r == UCOL_GREATER ? 1 : 0);
    else
      primary = FoldedCompare(a, b);
  } else {
    primary = FoldedCompare(a, b);
  }
  if (primary != 0) return primary;
  // Ties (e.g. `Foo` vs `foo`) fall back to bytes, so the order never depends on input order.
  int bytes = a.compare(b);
  return bytes < 0 ? -1 : (bytes > 0 ? 1 : 0);
}

void CollateSortStrings(std::vector<std::string>& items) {
  CollateSort(items, [](const std::string& s) -> std::string_view { return s; });
}

}  // namespace skillmcp
