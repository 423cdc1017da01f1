#include <optional>
#include <string>
#include <vector>

#include "broker/tools/file_reader.h"
#include "broker/tools/media_type.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/tool_args.h"

namespace skillmcp {
namespace {

// The message names the path it is about, so it still reads right when quoted alone.
OrderedJson ErrorEntry(const std::string& path, const std::string& error) {
  OrderedJson e;
  e["path"] = path;
  e["error"] = "\"" + path + "\": " + error;
  return e;
}

// An empty path names no file at all: the request itself is malformed, so the whole
// call fails (README, "Tools") rather than one entry.
std::optional<ToolResult> RefuseEmptyPath(const std::vector<std::string>& paths) {
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].empty()) {
      return ArgumentError("paths", "\"paths[" + std::to_string(i) +
                                        "]\" is the empty string; name a file relative to "
                                        "the skill directory, as skill_load lists them");
    }
  }
  return std::nullopt;
}

OrderedJson ContentEntry(const std::string& path, const OpenedFile& file,
                         const FileContent& content) {
  OrderedJson e;
  e["path"] = path;
  e["size"] = file.size;
  e["mediaType"] = MediaTypeForPath(path);
  e["encoding"] = content.text ? "utf-8" : "base64";
  e["truncated"] = content.truncated;
  if (content.truncated) {
    e["truncationNote"] = "the file is " + std::to_string(file.size) +
                          " bytes; only the first " + std::to_string(kFileEntryCap) +
                          " bytes are returned";
  }
  e["content"] = content.text ? content.bytes : Base64(content.bytes);
  return e;
}

}  // namespace

ToolResult SkillFile(const CatalogueView& view, const Json& args) {
  std::string name;
  if (auto err = RequireString(args, "name", &name)) return *err;
  std::vector<std::string> paths;
  if (auto err = StringArray(args, "paths", true, 1, kMaxPathsPerCall, &paths)) return *err;
  if (auto err = RefuseEmptyPath(paths)) return *err;
  const Skill* s = view.FindSkill(name);
  if (s == nullptr) return UnknownSkill(view, name);

  // Open and size every path first: the budget is decided before a byte is read, so the
  // answer never depends on the order the paths were listed in.
  std::vector<OpenedFile> opened;
  opened.reserve(paths.size());
  uint64_t budget = 0;
  for (const std::string& p : paths) {
    opened.push_back(OpenBundleFile(s->dir.get(), p));
    if (opened.back().fd) budget += std::min(opened.back().size, kFileEntryCap);
  }
  // Why: the caps bound the server's own heap, not only the answer.
  if (budget > kFileCallBudget) {
    return Refusal("CALL_BUDGET_EXCEEDED",
                   "these paths add up to " + std::to_string(budget) +
                       " bytes (each counted up to " + std::to_string(kFileEntryCap >> 20) +
                       " MiB), over the " + std::to_string(kFileCallBudget) +
                       "-byte budget of one call; request fewer paths per call");
  }
  OrderedJson files = OrderedJson::array();
  for (size_t i = 0; i < paths.size(); ++i) {
    const OpenedFile& f = opened[i];
    if (!f.fd) {
      files.push_back(ErrorEntry(paths[i], f.error));
      continue;
    }
    std::optional<FileContent> content = ReadBounded(f, kFileEntryCap);
    if (!content) {
      files.push_back(ErrorEntry(paths[i], "could not read the file"));
      continue;
    }
    files.push_back(ContentEntry(paths[i], f, *content));
  }
  OrderedJson out;
  out["skill"] = s->name;
  out["files"] = std::move(files);
  return ToolResult{std::move(out)};
}

}  // namespace skillmcp
