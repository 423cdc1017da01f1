// Untrusted text shown to the person who confirms a run (docs/wire.md §6):
// an argument must not be able to draw a fake line, reorder what is shown, hide characters
// or push the facts out of view.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace skillmcp {

// Characters shown escaped: controls (C0, DEL, C1), format characters (Cf: bidi embeddings,
// overrides, isolates and marks, zero-width joiners and spaces, tag characters), line and
// paragraph separators, every space but U+0020, private-use, unassigned and noncharacter
// code points, and the default-ignorable ones (Hangul fillers, variation selectors).
bool IsHiddenCodePoint(int code_point);

// How many characters of one value the prompt shows before cutting it.
inline constexpr size_t kShownChars = 200;

// `value` as one visible line, without the surrounding quotes: hidden characters as \uXXXX
// (\u{XXXXX} above U+FFFF), a backslash as \\, a double quote as \", an invalid byte as \xNN,
// a combining mark with nothing to attach to as \uXXXX. More than `max_chars` characters:
// the first `max_chars`, then " … [cut: N characters, M bytes in all]".
std::string ShowUntrusted(std::string_view value, size_t max_chars = kShownChars);

// JSON text (valid UTF-8, as nlohmann::json dumps it) with every hidden character inside
// its strings written as a JSON \uXXXX escape (surrogate pairs above U+FFFF): the same
// values for a parser, visible to anyone who reads the text.
std::string EscapeHiddenInJson(std::string_view json_text);

}  // namespace skillmcp
