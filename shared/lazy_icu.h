// ICU, opened with dlopen on first use instead of being linked: its libraries are about
// 3 MiB of the broker's resident pages and most of its start-up relocations, and only a
// non-ASCII skill name or file path (collation) or the non-ASCII text of a confirmation
// prompt needs them (docs/performance.md). ASCII takes table paths that the tests
// check against ICU itself.
#pragma once

#include <unicode/uchar.h>
#include <unicode/ucol.h>
#include <unicode/utypes.h>

namespace skillmcp::lazy_icu {

struct Api {
  decltype(&::ucol_open) ucol_open;
  decltype(&::ucol_close) ucol_close;
  decltype(&::ucol_setStrength) ucol_setStrength;
  decltype(&::ucol_strcollUTF8) ucol_strcollUTF8;
  decltype(&::u_errorName) u_errorName;
  decltype(&::u_charType) u_charType;
  decltype(&::u_hasBinaryProperty) u_hasBinaryProperty;
};

// The ICU this binary was built against (libicuuc and libicui18n of the same major
// version), loaded once; nullptr, with a warning logged once, when it cannot be.
// Thread-safe: the library is opened once, by the first caller (a function-local static).
const Api* Get();

// Whether Get() has loaded ICU in this process (tests, the benchmark).
bool Loaded();

}  // namespace skillmcp::lazy_icu
