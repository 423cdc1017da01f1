// Collation for everything the catalogue lists: ICU's root collator at primary strength
// (case-insensitive at the first level: `references/x` < `scripts/y` < `SKILL.md`), with
// ties broken by plain byte order so that every listing is deterministic.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// <0, 0 or >0. Returns 0 only for byte-identical strings. Strings are UTF-8; invalid
// sequences are compared as ICU's replacement character at the first level.
// Not thread-safe (the collator is made once, on first use; the server is single-threaded).
int CollateCompare(std::string_view a, std::string_view b);

// Sorts `items` by CollateCompare of key(item); stable.
template <typename T, typename KeyFn>
void CollateSort(std::vector<T>& items, KeyFn key);

void CollateSortStrings(std::vector<std::string>& items);

}  // namespace skillmcp

#include <algorithm>

template <typename T, typename KeyFn>
void skillmcp::CollateSort(std::vector<T>& items, KeyFn key) {
  std::stable_sort(items.begin(), items.end(),
                   [&key](const T& x, const T& y) { return CollateCompare(key(x), key(y)) < 0; });
}
