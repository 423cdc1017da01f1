// Public suffixes ("com", "co.uk", "github.io"): names under which anyone may register or
// publish a host of their own. A run's allowlist holds no wildcard over one unless the
// operator named it (RunEgressRules, broker/run/network_mode.h). The list is libpsl's:
// Debian's publicsuffix package where it is newer than the library's own copy.
#pragma once

#include <string_view>

namespace skillmcp {

// Loads the list once; the broker calls it when skill_run opens, so that no preview waits
// for the file. Returns false when no list could be had: every name then counts as a
// public suffix.
bool LoadPublicSuffixes();

// Whether `name` (a normalised host name, lower-case, no trailing dot) is a public
// suffix by an explicit rule of the list, ICANN's or the private section's. The list's
// implicit "*" rule is not applied: a name under a top-level domain the list does not
// know ("corp", "internal", "test") is an operator's own, not a public suffix.
bool IsPublicSuffix(std::string_view name);

// The shortest public suffix that is `name` or one of its parent domains and lies strictly
// under `base` (a parent domain of `name`), or "": "s3.amazonaws.com" for
// "bucket.s3.amazonaws.com" under "amazonaws.com".
std::string_view PublicSuffixUnder(std::string_view name, std::string_view base);

}  // namespace skillmcp
