#include <optional>
#include <string>
#include <vector>

#include "broker/tools/file_reader.h"
#include "broker/tools/json_writer.h"
#include "broker/tools/media_type.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/tool_args.h"

namespace skillmcp {
namespace {

// The message names the path it is about, so it still reads right when quoted alone.
void ErrorEntry(JsonWriter& w, const std::string& path, const std::string& error) {
  w.BeginObject();
  w.Key("path");
  w.String(path);
  w.Key("error");
  w.String("\"" + path + "\": " + error);
  w.EndObject();
}

// An empty path names no file at all: the request itself is malformed, so the whole
// call fails (docs/wire.md §2) rather than one entry.
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

// Written straight into the answer's buffer, escaped for both JSON layers in one pass
// (the payload is JSON text inside the JSON-RPC line; docs/performance.md).
void ContentEntry(JsonWriter& w, const std::string& path, const OpenedFile& file,
                  const FileContent& content) {
  w.BeginObject();
  w.Key("path");
  w.String(path);
  w.Key("size");
  w.Uint(file.size);
  w.Key("mediaType");
  w.String(MediaTypeForPath(path));
  w.Key("encoding");
  w.String(content.text ? "utf-8" : "base64");
  w.Key("truncated");
  w.Bool(content.truncated);
  if (content.truncated) {
    w.Key("truncationNote");
    w.String("the file is " + std::to_string(file.size) + " bytes; only the first " +
             std::to_string(kFileEntryCap) + " bytes are returned");
  }
  w.Key("content");
  if (content.text) {
    w.String(content.bytes);
  } else {
    w.Base64String(content.bytes);
  }
  w.EndObject();
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
  ToolResult result;
  // Base64 of the whole budget plus room for escapes: one allocation in the common case.
  result.text.reserve(static_cast<size_t>(budget / 3 * 4 + budget / 8 + 4096));
  JsonWriter w(&result.text, 2);
  w.BeginObject();
  w.Key("skill");
  w.String(s->name);
  w.Key("files");
  w.BeginArray();
  for (size_t i = 0; i < paths.size(); ++i) {
    const OpenedFile& f = opened[i];
    if (!f.fd) {
      ErrorEntry(w, paths[i], f.error);
      continue;
    }
    // One entry's bytes at a time (at most the 1 MiB cap), freed once written.
    std::optional<FileContent> content = ReadBounded(f, kFileEntryCap);
    if (!content) {
      ErrorEntry(w, paths[i], "could not read the file");
      continue;
    }
    ContentEntry(w, paths[i], f, *content);
  }
  w.EndArray();
  w.EndObject();
  return result;
}

}  // namespace skillmcp
