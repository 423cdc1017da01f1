// Collation for everything the catalogue lists, as String.prototype.localeCompare orders:
// ICU's root collator at tertiary strength (case-insensitive at the first level:
// `references/x` < `scripts/y` < `SKILL.md`; among names equal but for case, lower case
// first: `apple` < `Apple`), with remaining ties broken by plain byte order so that every
// listing is deterministic.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// <0, 0 or >0. Returns 0 only for byte-identical strings. Strings are UTF-8; invalid
// sequences are compared as ICU's replacement character at the first level.
// Thread-safe: the collator is made once, on first use, and used under a lock.
int CollateCompare(std::string_view a, std::string_view b);

// Sorts `items` by CollateCompare of key(item); stable.
template <typename T, typename KeyFn>
void CollateSort(std::vector<T>& items, KeyFn key);

// For an ASCII `s`: appends its primary key to `out` (the root collator's primary weight
// of each character, ignorables left out, one byte each, never 0) and returns true.
// False, with `out` unchanged, for any other string.
bool AsciiPrimaryKey(std::string_view s, std::string* out);

// For an ASCII `s`: appends its collation key (the primary key, a 0, then one case byte
// per non-ignorable character) and returns true, so that for ASCII strings
// CollateCompare(a, b) orders as (collation key, then bytes) compared with memcmp. False,
// with `out` unchanged, for any other string.
bool AsciiCollationKey(std::string_view s, std::string* out);

void CollateSortStrings(std::vector<std::string>& items);

}  // namespace skillmcp

#include <algorithm>
#include <numeric>
#include <utility>

template <typename T, typename KeyFn>
void skillmcp::CollateSort(std::vector<T>& items, KeyFn key) {
  // All-ASCII keys (nearly every tree): each key's collation key is made once and the sort
  // compares bytes, instead of walking the weight table on every comparison; a 2,000-file
  // skill's manifest sort was 60% of the scan (tests/bench/README.md). Same order.
  std::vector<std::string> keys(items.size());
  bool ascii = true;
  for (size_t i = 0; i < items.size() && ascii; ++i)
    ascii = AsciiCollationKey(key(items[i]), &keys[i]);
  if (!ascii) {
    std::stable_sort(items.begin(), items.end(),
                     [&key](const T& x, const T& y) { return CollateCompare(key(x), key(y)) < 0; });
    return;
  }
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (int c = keys[x].compare(keys[y]); c != 0) return c < 0;
    return key(items[x]) < key(items[y]);
  });
  std::vector<T> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  items = std::move(sorted);
}
