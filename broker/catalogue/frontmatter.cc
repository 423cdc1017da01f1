#include "broker/catalogue/frontmatter.h"

#include <algorithm>
#include <iterator>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/yaml_json.h"
#include "broker/catalogue/yaml_strict.h"
#include "shared/lines.h"
#include "shared/utf8.h"

namespace skillmcp {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// True when `line` (without its '\n') is a `---` fence, trailing blanks/CR allowed.
bool IsFence(std::string_view line) {
  if (line.substr(0, 3) != "---") return false;
  for (char c : line.substr(3)) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

struct LineSpan {
  int first = 0;  // 1-based lines of the frontmatter text, inclusive
  int last = 0;
};

bool IsDeclarationKeyLine(std::string_view line) {
  for (std::string_view key : {"mcp-host", "\"mcp-host\"", "'mcp-host'"}) {
    if (line.substr(0, key.size()) != key) continue;
    size_t i = key.size();
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == ':' &&
        (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t' ||
         line[i + 1] == '\r')) {
      return true;
    }
  }
  return false;
}

// The lines of a top-level `mcp-host:` block written in block style: from its key line to
// the line before the next column-0 key. Used only to confine an error to the block.
std::optional<LineSpan> FindDeclarationLines(std::string_view fm) {
  std::optional<LineSpan> span;
  int line_no = 0;
  for (std::string_view line : Lines(fm)) {
    ++line_no;
    if (span && span->last == 0) {
      bool top_level = !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#' &&
                       line[0] != '\r' && line[0] != '-';
      if (top_level) span->last = line_no - 1;
    } else if (!span && IsDeclarationKeyLine(line)) {
      span = LineSpan{line_no, 0};
    }
  }
  if (span && span->last == 0) span->last = line_no;
  return span;
}

// `fm` with lines first..last emptied (newlines kept, so positions stay true).
std::string BlankLines(std::string_view fm, LineSpan span) {
  std::string out;
  out.reserve(fm.size());
  int line_no = 1;
  for (char c : fm) {
    if (c == '\n') {
      out.push_back(c);
      ++line_no;
    } else if (line_no < span.first || line_no > span.last) {
      out.push_back(c);
    }
  }
  return out;
}

std::string WithPosition(const YamlError& e, int line_offset) {
  std::string at = DescribePosition(e, line_offset);
  return at.empty() ? e.message : e.message + " (SKILL.md " + at + ")";
}

void Malformed(ParsedSkillMd* out, std::string detail) {
  out->servable = false;
  out->issues.push_back({reason::kMalformedFrontmatter, std::move(detail)});
}

// A top-level string field, or nullopt when it is absent or not a string: a value of the
// wrong type counts as absent (frontmatter.h).
std::optional<std::string> StringField(const YAML::Node& root, const char* key) {
  const YAML::Node node = root[key];
  if (ResolveCore(node) != CoreType::kString) return std::nullopt;
  return node.Scalar();  // the whole frontmatter was checked as UTF-8 already
}

void ReadFields(const YAML::Node& root, ParsedSkillMd* out) {
  out->name_present = ResolveCore(root["name"]) != CoreType::kUndefined &&
                      ResolveCore(root["name"]) != CoreType::kNull;
  out->name = StringField(root, "name");
  out->description = StringField(root, "description");
  out->when_to_use = StringField(root, "when-to-use");
  if (!out->when_to_use) out->when_to_use = StringField(root, "when_to_use");
}

// Why reported: a key such as `hooks:` may be meant for a host that acts on it; this server
// ignores it, and the author must be able to see that it did.
void NoteUnknownTopLevelKeys(const YAML::Node& root, int line_offset, ParsedSkillMd* out) {
  for (const auto& kv : root) {
    const std::string& key = kv.first.Scalar();
    if (std::find(std::begin(kKnownFrontmatterKeys), std::end(kKnownFrontmatterKeys), key) !=
        std::end(kKnownFrontmatterKeys)) {
      continue;
    }
    std::string at;
    if (!kv.first.Mark().is_null()) {
      at = " (line " + std::to_string(kv.first.Mark().line + 1 + line_offset) + ")";
    }
    out->issues.push_back(
        {reason::kDeclaration,
         "the frontmatter key '" + key + "'" + at +
             " is not one this server knows, and was ignored (known: name, description, "
             "when-to-use, when_to_use, license, version, allowed-tools, metadata, "
             "mcp-host); the skill is served without it"});
  }
}

}  // namespace

SkillMdSplit SplitSkillMd(std::string_view text) {
  SkillMdSplit split;
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  size_t eol = text.find('\n');
  if (eol == std::string_view::npos || !IsFence(text.substr(0, eol))) {
    split.status = SkillMdSplit::Status::kNoOpeningFence;
    return split;
  }
  const size_t start = eol + 1;
  size_t pos = start;
  while (pos <= text.size()) {
    if (pos - start > kFrontmatterCap) {
      split.status = SkillMdSplit::Status::kTooLarge;
      return split;
    }
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (IsFence(text.substr(pos, end - pos))) {
      split.status = SkillMdSplit::Status::kOk;
      split.frontmatter = text.substr(start, pos - start);
      // The body starts after the fence line's line break (none: the body is empty).
      split.body = end == text.size() ? std::string_view() : text.substr(end + 1);
      return split;
    }
    if (end == text.size()) break;
    pos = end + 1;
  }
  split.status = SkillMdSplit::Status::kUnterminated;
  return split;
}

ParsedSkillMd ParseSkillMd(std::string_view text, bool truncated) {
  ParsedSkillMd out;
  SkillMdSplit split = SplitSkillMd(text);
  switch (split.status) {
    case SkillMdSplit::Status::kOk:
      break;
    case SkillMdSplit::Status::kNoOpeningFence:
      Malformed(&out,
                "SKILL.md does not start with a `---` line; it must open with YAML "
                "frontmatter (name, description) between two `---` lines");
      return out;
    case SkillMdSplit::Status::kUnterminated:
      Malformed(&out, "the frontmatter is never closed: add a `---` line after it");
      return out;
    case SkillMdSplit::Status::kTooLarge:
      Malformed(&out, "the frontmatter is larger than " + std::to_string(kFrontmatterCap) +
                          " bytes (or its closing `---` line is missing); shorten it");
      return out;
  }
  const int line_offset = split.frontmatter_line - 1;
  const std::string_view fm = split.frontmatter;
  if (!IsValidUtf8(fm) || fm.find('\0') != std::string_view::npos) {
    Malformed(&out, "the frontmatter is not valid UTF-8 text");
    return out;
  }

  StrictYaml yaml = LoadStrictYaml(fm);
  std::optional<std::string> declaration_error;
  if (!yaml.ok) {
    // When the frontmatter parses once the mcp-host block is blanked out, the fault lies
    // in the block (the parser may only notice it lines later, e.g. an unclosed `[`).
    std::optional<LineSpan> block = FindDeclarationLines(fm);
    StrictYaml rest = block ? LoadStrictYaml(BlankLines(fm, *block)) : StrictYaml{};
    if (!rest.ok) {
      Malformed(&out, "the frontmatter is not valid strict YAML: " +
                          WithPosition(yaml.error, line_offset));
      return out;
    }
    // The fault is confined to the mcp-host block: the skill keeps its instructions.
    declaration_error = WithPosition(yaml.error, line_offset);
    yaml = std::move(rest);
  }
  const YAML::Node& root = yaml.root;
  CoreType root_type = ResolveCore(root);
  if (root_type != CoreType::kMap && root_type != CoreType::kNull) {
    Malformed(&out, std::string("the frontmatter must be a mapping of keys (name, "
                                "description, ...) but is ") +
                        CoreTypeName(root_type));
    return out;
  }
  if (root_type == CoreType::kMap) {
    ReadFields(root, &out);
    NoteUnknownTopLevelKeys(root, line_offset, &out);
  }
  out.servable = true;
  // why: one strict parse per SKILL.md (it is most of the start-up's instructions); the
  // JSON exists only where the whole frontmatter parsed, as FrontmatterJsonText says.
  if (!declaration_error) out.frontmatter_json = FrontmatterJson(root).value_or("");
  if (declaration_error) {
    out.declaration_present = true;
    out.issues.push_back(
        {reason::kDeclaration, "the mcp-host block was refused: " + *declaration_error +
                                   "; no script from this skill can run, its instructions are "
                                   "still served"});
  } else if (root_type == CoreType::kMap && root[kDeclarationKey].IsDefined()) {
    out.declaration_present = true;
    out.declaration = InterpretDeclaration(root[kDeclarationKey], line_offset);
    for (auto& issue : out.declaration.issues) out.issues.push_back({reason::kDeclaration, issue});
  }
  std::string_view body = split.body;
  // The body is the UTF-8 decoding of the bytes read: a character cut by the cap becomes
  // one U+FFFD, as a decoder makes of an incomplete sequence at the end.
  const bool cut = truncated && Utf8SafePrefixLength(body) < body.size();
  if (cut) body = body.substr(0, Utf8SafePrefixLength(body));
  out.body = std::string(body);
  if (cut) out.body += "\xEF\xBF\xBD";
  out.body_truncated = truncated;
  return out;
}

}  // namespace skillmcp
