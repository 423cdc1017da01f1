// UTF-8 checks for text that ends up in JSON: names, paths, frontmatter fields, files.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace skillmcp {

// Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Length of the well-formed character starting at s[i] (i < s.size()): 1 to 4 bytes, or 0
// when the bytes there are not one (a stray or cut sequence, an overlong, a surrogate).
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Length of the longest prefix of `s` that does not end inside a multi-byte sequence,
// for cutting a capped read without splitting a character.
size_t Utf8SafePrefixLength(std::string_view s);

// Valid UTF-8 from arbitrary bytes: each invalid sequence becomes U+FFFD. When `cut` is
// true the bytes were cut at a cap, and an incomplete character at the very end is
// dropped rather than replaced (a cut is not an encoding error of the writer).
std::string RepairUtf8(std::string_view bytes, bool cut);

}  // namespace skillmcp
