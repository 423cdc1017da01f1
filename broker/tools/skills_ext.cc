#include "broker/tools/skills_ext.h"

#include <charconv>
#include <vector>

#include "broker/catalogue/skill.h"
#include "broker/catalogue/skills_ext_check.h"
#include "broker/protocol/error_codes.h"
#include "broker/tools/file_reader.h"
#include "broker/tools/media_type.h"
#include "broker/tools/skill_digest.h"

namespace skillmcp {
namespace {

using rpc::kInternalError;
using rpc::kInvalidParams;

// resources/read serves at most kFileEntryCap of a file; the extension check refuses
// larger files with the same number, so every digest covers what resources/read returns.
static_assert(kExtMaxFileBytes == kFileEntryCap);

constexpr char kListCursor[] = "skills-page:";
constexpr char kDirCursor[] = "dir-page:";

std::string SkillUri(const Skill& s) { return kResourceScheme + s.name + "/" + kSkillMd; }

// The offset a cursor of ours carries, or nullopt for anything we did not hand out.
std::optional<size_t> ParseCursor(const Json& params, std::string_view prefix, size_t limit) {
  auto c = params.find("cursor");
  if (c == params.end() || c->is_null()) return size_t{0};
  if (!c->is_string()) return std::nullopt;
  std::string_view s = c->get_ref<const std::string&>();
  if (s.substr(0, prefix.size()) != prefix) return std::nullopt;
  s.remove_prefix(prefix.size());
  size_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || n == 0 || n >= limit) {
    return std::nullopt;
  }
  return n;
}

OrderedJson Cacheable(OrderedJson result) {
  // Why ttlMs 0: files can change under a running server (docs/wire.md §9),
  // so no freshness is promised; private: skills are this deployment's, not for a shared
  // cache.
  result["ttlMs"] = 0;
  result["cacheScope"] = "private";
  return result;
}

struct Child {
  std::string name;
  bool directory = false;
};

// The direct children of `dir` ("" for the skill root) in manifest order, or nullopt when
// no served file lies beneath it. `*is_file` says `dir` names a file instead.
std::optional<std::vector<Child>> ChildrenOf(const Skill& s, const std::string& dir,
                                             bool* is_file) {
  std::vector<Child> out;
  const std::string prefix = dir.empty() ? "" : dir + "/";
  for (const ManifestFile& f : s.files) {
    if (f.path == dir) *is_file = true;
    if (f.path.compare(0, prefix.size(), prefix) != 0 || f.path.size() == prefix.size()) {
      continue;
    }
    std::string rest = f.path.substr(prefix.size());
    size_t slash = rest.find('/');
    Child c{rest.substr(0, slash), slash != std::string::npos};
    bool seen = false;
    for (const Child& o : out) seen = seen || (o.name == c.name && o.directory == c.directory);
    if (!seen) out.push_back(std::move(c));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

OrderedJson SkillsExtension::Capability() { return OrderedJson{{"directoryRead", true}}; }

const SkillsExtension::Cached& SkillsExtension::EntryFor(const Skill& s) {
  auto it = entries_.find(&s);
  if (it != entries_.end()) return it->second;
  Cached cached;
  OrderedJson resources = OrderedJson::array();
  for (const ManifestFile& f : s.files) {
    FileDigest d = DigestBundleFile(s.dir.get(), f.path, kExtMaxFileBytes);
    if (d.digest.empty()) {
      cached.error = "skill '" + s.name + "' cannot be described: '" + f.path + "': " + d.error;
      return entries_.emplace(&s, std::move(cached)).first->second;
    }
    resources.push_back(OrderedJson{{"uri", kResourceScheme + s.name + "/" + f.path},
                                    {"digest", std::move(d.digest)},
                                    {"size", d.size}});
  }
  cached.entry = OrderedJson{{"uri", SkillUri(s)},
                             {"frontmatter", OrderedJson::parse(s.frontmatter_json)},
                             {"resources", std::move(resources)}};
  return entries_.emplace(&s, std::move(cached)).first->second;
}

SurfaceAnswer SkillsExtension::List(const Json& params) {
  const auto& skills = view_.catalogue->skills;
  std::optional<size_t> start = ParseCursor(params, kListCursor, skills.size());
  if (!start) return SurfaceError(kInvalidParams, "skills/list: unknown cursor; start without one");
  OrderedJson page = OrderedJson::array();
  size_t held = 0;
  size_t i = *start;
  for (; i < skills.size(); ++i) {
    const Skill& s = skills[i];
    if (s.skills_ext_omission) continue;
    if (!page.empty() && held + s.files.size() > kSkillsPageResources) break;
    const Cached& c = EntryFor(s);
    if (!c.entry) continue;
    page.push_back(*c.entry);
    held += s.files.size();
  }
  OrderedJson result{{"resultType", "complete"}, {"skills", std::move(page)}};
  if (i < skills.size()) result["nextCursor"] = kListCursor + std::to_string(i);
  SurfaceAnswer a;
  a.result = Cacheable(std::move(result));
  return a;
}

SurfaceAnswer SkillsExtension::Get(const Json& params) {
  auto uri_it = params.find("uri");
  if (uri_it == params.end() || !uri_it->is_string()) {
    return SurfaceError(kInvalidParams, "skills/get needs \"uri\", a string");
  }
  const std::string& uri = uri_it->get_ref<const std::string&>();
  for (const Skill& s : view_.catalogue->skills) {
    if (s.skills_ext_omission || SkillUri(s) != uri) continue;
    const Cached& c = EntryFor(s);
    if (!c.entry) return SurfaceError(kInternalError, c.error, uri);
    SurfaceAnswer a;
    a.result = Cacheable(OrderedJson{{"resultType", "complete"}, {"skill", *c.entry}});
    return a;
  }
  return SurfaceError(kInvalidParams,
                      "No skill is served at " + uri +
                          "; skills/list shows the skills served here, "
                          "and skill_list's problems say why a skill is left out",
                      uri);
}

SurfaceAnswer SkillsExtension::ReadDirectory(const Json& params) const {
  auto uri_it = params.find("uri");
  if (uri_it == params.end() || !uri_it->is_string()) {
    return SurfaceError(kInvalidParams, "resources/directory/read needs \"uri\", a string");
  }
  const std::string& uri = uri_it->get_ref<const std::string&>();
  const std::string scheme = kResourceScheme;
  const std::string missing = uri + " is not a directory resource served here";
  if (uri.rfind(scheme, 0) != 0 || uri.back() == '/')
    return SurfaceError(kInvalidParams, missing, uri);
  std::string rest = uri.substr(scheme.size());
  size_t slash = rest.find('/');
  const Skill* s = view_.FindSkill(rest.substr(0, slash));
  if (s == nullptr) return SurfaceError(kInvalidParams, missing, uri);
  const std::string dir = slash == std::string::npos ? "" : rest.substr(slash + 1);
  bool is_file = false;
  std::optional<std::vector<Child>> children = ChildrenOf(*s, dir, &is_file);
  if (!children) {
    return SurfaceError(
        kInvalidParams,
        is_file ? uri + " is a file, not a directory resource; resources/read reads it" : missing,
        uri);
  }
  std::optional<size_t> start = ParseCursor(params, kDirCursor, children->size());
  if (!start) {
    return SurfaceError(kInvalidParams,
                        "resources/directory/read: unknown cursor; start without one");
  }
  OrderedJson resources = OrderedJson::array();
  size_t end = std::min(children->size(), *start + kDirectoryPageSize);
  for (size_t i = *start; i < end; ++i) {
    const Child& c = (*children)[i];
    std::string child_uri = uri + "/" + c.name;
    std::string type = c.directory ? "inode/directory" : MediaTypeForPath(c.name);
    resources.push_back(
        OrderedJson{{"uri", std::move(child_uri)}, {"name", c.name}, {"mimeType", type}});
  }
  OrderedJson result{{"resultType", "complete"}, {"resources", std::move(resources)}};
  if (end < children->size()) result["nextCursor"] = kDirCursor + std::to_string(end);
  SurfaceAnswer a;
  a.result = std::move(result);
  return a;
}

}  // namespace skillmcp
