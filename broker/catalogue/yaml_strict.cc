#include "broker/catalogue/yaml_strict.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

#include "shared/lines.h"

namespace skillmcp {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

YamlError ErrorAt(int line, int column, std::string message) {
  return YamlError{line, column, std::move(message)};
}

YamlError FromMark(const YAML::Mark& mark, std::string message) {
  if (mark.is_null()) return ErrorAt(0, 0, std::move(message));
  return ErrorAt(mark.line + 1, mark.column + 1, std::move(message));
}

// True when the rest of `line` from `i` is a block-scalar header tail: indentation and
// chomping indicators, then blanks or a comment.
bool IsBlockScalarHeaderTail(std::string_view line, size_t i) {
  while (i < line.size() &&
         (line[i] == '+' || line[i] == '-' || (line[i] >= '1' && line[i] <= '9')))
    ++i;
  while (i < line.size() && IsBlank(line[i])) ++i;
  return i == line.size() || line[i] == '#';
}

}  // namespace

std::optional<YamlError> CheckNestingDepth(std::string_view text, int max_depth) {
  enum class Quote { kNone, kSingle, kDouble } quote = Quote::kNone;
  int flow = 0;
  long block_scalar_parent = -1;  // content column threshold of an open block scalar
  int line_no = 0;
  for (std::string_view line : Lines(text)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    bool blank = true;
    for (char c : line) blank = blank && IsBlank(c);
    if (quote == Quote::kNone && block_scalar_parent >= 0) {
      if (blank || static_cast<long>(indent) > block_scalar_parent) continue;  // content
      block_scalar_parent = -1;
    }
    size_t i = 0;
    int compact = 0;
    if (quote == Quote::kNone) {
      i = indent;
      // Leading block indicators (`- `, `? `, `: `) each open a level without indenting.
      while (i < line.size() && (line[i] == '-' || line[i] == '?' || line[i] == ':') &&
             (i + 1 == line.size() || IsBlank(line[i + 1]))) {
        ++compact;
        ++i;
        while (i < line.size() && IsBlank(line[i])) ++i;
      }
    }
    const long base = static_cast<long>(indent) + compact;
    if (!blank && base + flow > max_depth) {
      return ErrorAt(line_no, static_cast<int>(indent) + 1,
                     "the YAML is nested more than " + std::to_string(max_depth) + " levels deep");
    }
    const size_t content_column = i;
    bool boundary = true;  // a token may start here (quotes, block scalar headers)
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote == Quote::kSingle) {
        if (c == '\'') {
          if (i + 1 < line.size() && line[i + 1] == '\'') {
            ++i;  // '' is an escaped quote
          } else {
            quote = Quote::kNone;
            boundary = false;
          }
        }
        continue;
      }
      if (quote == Quote::kDouble) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          quote = Quote::kNone;
          boundary = false;
        }
        continue;
      }
      if (IsBlank(c)) continue;
      if (c == '#' && (i == 0 || IsBlank(line[i - 1]))) break;  // comment
      if (boundary && c == '\'') {
        quote = Quote::kSingle;
      } else if (boundary && c == '"') {
        quote = Quote::kDouble;
      } else if (boundary && flow == 0 && (c == '|' || c == '>') &&
                 IsBlockScalarHeaderTail(line, i + 1)) {
        block_scalar_parent = static_cast<long>(content_column);
        break;
      } else if (c == '[' || c == '{') {
        ++flow;
        if (base + flow > max_depth) {
          return ErrorAt(
              line_no, static_cast<int>(i) + 1,
              "the YAML is nested more than " + std::to_string(max_depth) + " levels deep");
        }
        boundary = true;
      } else if (c == ']' || c == '}') {
        if (flow > 0) --flow;
        boundary = false;
      } else if (c == ',') {
        boundary = true;
      } else if ((c == ':' || c == '-' || c == '?') &&
                 (i + 1 == line.size() || IsBlank(line[i + 1]))) {
        boundary = true;
      } else {
        boundary = false;
      }
    }
  }
  return std::nullopt;
}

namespace {

// Walks the event stream once and records the first construct strict reading refuses.
class StrictnessCheck : public YAML::EventHandler {
 public:
  const std::optional<YamlError>& error() const { return error_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Node(mark, anchor, "", NodeKind::kNull, "");
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    // Why: aliases let a small text expand into a huge tree and let one value hide in two
    // places; a declaration must read the same to a person and to the parser.
    Fail(mark, "an alias (*name) is not accepted; write the value out in full");
    Node(mark, YAML::NullAnchor, "", NodeKind::kAlias, "");
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Node(mark, anchor, tag, NodeKind::kScalar, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Node(mark, anchor, tag, NodeKind::kCollection, "");
    stack_.push_back(Frame{false, true, {}});
  }
  void OnSequenceEnd() override { Pop(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Node(mark, anchor, tag, NodeKind::kCollection, "");
    stack_.push_back(Frame{true, true, {}});
  }
  void OnMapEnd() override { Pop(); }

 private:
  enum class NodeKind { kNull, kAlias, kScalar, kCollection };
  struct Frame {
    bool is_map;
    bool expect_key;
    std::set<std::string> keys;
  };

  void Fail(const YAML::Mark& mark, std::string message) {
    if (!error_) error_ = FromMark(mark, std::move(message));
  }
  void Pop() {
    if (!stack_.empty()) stack_.pop_back();
  }

  void Node(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& tag, NodeKind kind,
            const std::string& value) {
    if (anchor != YAML::NullAnchor) {
      // Why: anchors only exist to be aliased; refusing both keeps the text literal.
      Fail(mark, "an anchor (&name) is not accepted; write each value out in full");
    }
    // "?" marks a plain node, "!" a quoted scalar, "" an empty node: nothing else.
    if (!tag.empty() && tag != "?" && tag != "!") {
      Fail(mark, "the explicit tag '" + tag +
                     "' is not accepted; values are read with the "
                     "YAML 1.2 core schema only");
    }
    if (stack_.empty() || !stack_.back().is_map) return;
    Frame& frame = stack_.back();
    bool is_key = frame.expect_key;
    frame.expect_key = !frame.expect_key;
    if (!is_key) return;
    if (kind != NodeKind::kScalar) {
      Fail(mark, "a mapping key must be a plain scalar, not an empty, aliased or nested value");
      return;
    }
    if (value == "<<" && tag == "?") {
      // Why: a merge key splices another mapping in, so the keys a reader sees are not the
      // keys that count.
      Fail(mark, "the merge key '<<' is not accepted; write the keys out in full");
    }
    if (!frame.keys.insert(value).second) {
      // Why: with a duplicated key, two readers may disagree about which value counts.
      Fail(mark, "the key '" + value + "' appears twice in one mapping");
    }
  }

  std::vector<Frame> stack_;
  std::optional<YamlError> error_;
};

// Core-schema patterns for plain scalars (YAML 1.2, section 10.3.2).
bool IsDigits(std::string_view s, bool (*ok)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!ok(c)) return false;
  }
  return true;
}
bool Dec(char c) { return c >= '0' && c <= '9'; }
bool Oct(char c) { return c >= '0' && c <= '7'; }
bool Hex(char c) { return Dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool IsCoreInt(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o') return IsDigits(s.substr(2), Oct);
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') return IsDigits(s.substr(2), Hex);
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return IsDigits(s, Dec);
}

bool IsCoreFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
  // [0-9]+ ( . [0-9]* )? | . [0-9]+ , then an optional exponent.
  size_t i = 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && Dec(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && Dec(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && Dec(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

}  // namespace

StrictYaml LoadStrictYaml(std::string_view text) {
  StrictYaml out;
  if (auto deep = CheckNestingDepth(text, kMaxYamlNesting)) {
    out.error = *deep;
    return out;
  }
  try {
    std::istringstream first{std::string(text)};
    YAML::Parser parser(first);
    StrictnessCheck check;
    parser.HandleNextDocument(check);
    if (check.error()) {
      out.error = *check.error();
      return out;
    }
    StrictnessCheck second;
    if (parser.HandleNextDocument(second)) {
      out.error = ErrorAt(0, 0, "more than one YAML document; the frontmatter is one mapping");
      return out;
    }
    out.root = YAML::Load(std::string(text));
    out.ok = true;
  } catch (const YAML::Exception& e) {
    out.error = FromMark(e.mark, e.msg.empty() ? "the YAML does not parse" : e.msg);
  } catch (const std::exception& e) {
    out.error = ErrorAt(0, 0, std::string("the YAML could not be read: ") + e.what());
  }
  return out;
}

CoreType ResolveCore(const YAML::Node& node) {
  if (!node.IsDefined()) return CoreType::kUndefined;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      return CoreType::kUndefined;
    case YAML::NodeType::Null:
      return CoreType::kNull;
    case YAML::NodeType::Sequence:
      return CoreType::kSequence;
    case YAML::NodeType::Map:
      return CoreType::kMap;
    case YAML::NodeType::Scalar:
      break;
  }
  if (node.Tag() != "?") return CoreType::kString;  // quoted or block scalar
  const std::string& s = node.Scalar();
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return CoreType::kNull;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") {
    return CoreType::kBool;
  }
  if (IsCoreInt(s)) return CoreType::kInt;
  if (IsCoreFloat(s)) return CoreType::kFloat;
  return CoreType::kString;
}

const char* CoreTypeName(CoreType type) {
  switch (type) {
    case CoreType::kNull:
      return "empty (null)";
    case CoreType::kBool:
      return "a boolean";
    case CoreType::kInt:
      return "an integer";
    case CoreType::kFloat:
      return "a number";
    case CoreType::kString:
      return "a string";
    case CoreType::kSequence:
      return "a list";
    case CoreType::kMap:
      return "a mapping";
    case CoreType::kUndefined:
      return "missing";
  }
  return "unknown";
}

std::optional<double> CoreNumber(const YAML::Node& node) {
  CoreType type = ResolveCore(node);
  if (type != CoreType::kInt && type != CoreType::kFloat) return std::nullopt;
  std::string s = node.Scalar();
  if (type == CoreType::kInt) {
    if (s.rfind("0o", 0) == 0) return static_cast<double>(std::strtoull(s.c_str() + 2, nullptr, 8));
    if (s.rfind("0x", 0) == 0)
      return static_cast<double>(std::strtoull(s.c_str() + 2, nullptr, 16));
    return std::strtod(s.c_str(), nullptr);
  }
  std::string_view v = s;
  bool neg = !v.empty() && v[0] == '-';
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) v.remove_prefix(1);
  if (v == ".inf" || v == ".Inf" || v == ".INF") return neg ? -HUGE_VAL : HUGE_VAL;
  if (v == ".nan" || v == ".NaN" || v == ".NAN") return std::nan("");
  return std::strtod(s.c_str(), nullptr);
}

std::string DescribePosition(const YamlError& error, int line_offset) {
  if (error.line <= 0) return "";
  return "line " + std::to_string(error.line + line_offset) + ", column " +
         std::to_string(error.column);
}

}  // namespace skillmcp
