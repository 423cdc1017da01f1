#include "broker/tools/surfaces.h"

#include "broker/protocol/error_codes.h"
#include "broker/tools/file_reader.h"
#include "broker/tools/json_writer.h"
#include "broker/tools/media_type.h"

namespace skillmcp {
namespace {

using rpc::kInvalidParams;
using rpc::kResourceNotFound;

// Description and when-to-use joined with one space, as the reference sends them.
std::string PromptDescription(const Skill& s) {
  std::string d = s.description.value_or("");
  if (s.when_to_use && !s.when_to_use->empty()) {
    if (!d.empty()) d += " ";
    d += *s.when_to_use;
  }
  return d;
}

// A refused or missing resource.
SurfaceAnswer FailUri(const std::string& uri, std::string message) {
  return SurfaceError(kResourceNotFound, std::move(message), uri);
}

}  // namespace

SurfaceAnswer SurfaceError(int code, std::string message, std::optional<std::string> uri) {
  SurfaceAnswer a;
  a.error_code = code;
  a.error_message = std::move(message);
  if (uri) a.error_data = Json{{"uri", *uri}};
  return a;
}

OrderedJson SurfaceResult(const SurfaceAnswer& answer) {
  return answer.result_json.empty() ? answer.result : OrderedJson::parse(answer.result_json);
}

OrderedJson PromptsList(const CatalogueView& view) {
  OrderedJson prompts = OrderedJson::array();
  for (const Skill& s : view.catalogue->skills) {
    prompts.push_back(
        OrderedJson{{"name", s.name}, {"title", s.name}, {"description", PromptDescription(s)}});
  }
  return OrderedJson{{"prompts", std::move(prompts)}};
}

SurfaceAnswer PromptsGet(const CatalogueView& view, const Json& params) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return SurfaceError(kInvalidParams, "prompts/get needs \"name\", a string");
  }
  const Skill* s = view.FindSkill(name->get<std::string>());
  if (s == nullptr) {
    return SurfaceError(kInvalidParams, "no prompt named \"" + name->get<std::string>() +
                                            "\"; prompts/list shows one per served skill");
  }
  OrderedJson message{{"role", "user"}, {"content", {{"type", "text"}, {"text", s->body}}}};
  SurfaceAnswer a;
  a.result = OrderedJson{{"description", PromptDescription(*s)},
                         {"messages", OrderedJson::array({message})}};
  return a;
}

OrderedJson ResourcesList(const CatalogueView& view) {
  OrderedJson resources = OrderedJson::array();
  for (const Skill& s : view.catalogue->skills) {
    for (const ManifestFile& f : s.files) {
      if (resources.size() >= kMaxResourcesListed) break;
      std::string uri = kResourceScheme + s.name + "/" + f.path;
      resources.push_back(OrderedJson{{"uri", uri},
                                      {"name", uri},
                                      {"title", s.name + ": " + f.path},
                                      {"mimeType", MediaTypeForPath(f.path)}});
    }
  }
  return OrderedJson{{"resources", std::move(resources)}};
}

SurfaceAnswer ResourcesRead(const CatalogueView& view, const Json& params) {
  auto uri_it = params.find("uri");
  if (uri_it == params.end() || !uri_it->is_string()) {
    return SurfaceError(kInvalidParams, "resources/read needs \"uri\", a string");
  }
  const std::string uri = uri_it->get<std::string>();
  const std::string scheme = kResourceScheme;
  size_t slash = uri.find('/', scheme.size());
  if (uri.rfind(scheme, 0) != 0 || slash == std::string::npos) {
    return FailUri(
        uri, "\"" + uri + "\" is not a skill resource; URIs look like skill://<skill>/<path>");
  }
  std::string name = uri.substr(scheme.size(), slash - scheme.size());
  std::string path = uri.substr(slash + 1);
  const Skill* s = view.FindSkill(name);
  if (s == nullptr) {
    return FailUri(uri, "no skill named \"" + name + "\" is served here (\"" + uri +
                            "\"); resources/list shows the served files");
  }
  // Same containment as skill_file: string check, then a descriptor opened beneath the
  // skill directory.
  OpenedFile file = OpenBundleFile(s->dir.get(), path);
  if (!file.fd) return FailUri(uri, "\"" + uri + "\": " + file.error);
  // A larger file gives its first 1 MiB, as skill_file does (which also says it was cut
  // and gives the real size); the cap bounds the server's heap either way.
  std::optional<FileContent> content = ReadBounded(file, kFileEntryCap);
  if (!content) return FailUri(uri, "\"" + uri + "\": could not read the file");
  // {contents: [{uri, mimeType, text | blob}]}, written once into the answer's buffer.
  SurfaceAnswer a;
  a.result_json.reserve(content->bytes.size() / 3 * 4 + uri.size() + 256);
  JsonWriter w(&a.result_json, 1);
  w.BeginObject();
  w.Key("contents");
  w.BeginArray();
  w.BeginObject();
  w.Key("uri");
  w.String(uri);
  w.Key("mimeType");
  w.String(MediaTypeForPath(path));
  if (content->text) {
    w.Key("text");
    w.String(content->bytes);
  } else {
    w.Key("blob");
    w.Base64String(content->bytes);
  }
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return a;
}

}  // namespace skillmcp
