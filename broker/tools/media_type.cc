#include "broker/tools/media_type.h"

#include <string>
#include <utility>

namespace skillmcp {

const char* MediaTypeForPath(std::string_view path) {
  static constexpr std::pair<const char*, const char*> kTypes[] = {
      {"md", "text/markdown"},       {"txt", "text/plain"},
      {"json", "application/json"},  {"yaml", "application/yaml"},
      {"yml", "application/yaml"},   {"csv", "text/csv"},
      {"js", "text/javascript"},     {"mjs", "text/javascript"},
      {"ts", "text/typescript"},     {"py", "text/x-python"},
      {"sh", "application/x-sh"},    {"html", "text/html"},
      {"css", "text/css"},           {"xml", "application/xml"},
      {"xsd", "application/xml"},    {"svg", "image/svg+xml"},
      {"png", "image/png"},          {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},        {"gif", "image/gif"},
      {"webp", "image/webp"},        {"pdf", "application/pdf"},
      {"zip", "application/zip"},
  };
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == base.size()) {
    return "application/octet-stream";
  }
  std::string ext(base.substr(dot + 1));
  for (char& c : ext) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  for (const auto& [e, type] : kTypes) {
    if (ext == e) return type;
  }
  return "application/octet-stream";
}

}  // namespace skillmcp
