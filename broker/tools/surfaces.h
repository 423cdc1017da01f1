// The second door: every skill as an MCP prompt, every bundled file as a resource
// (skill://<name>/<path>). The tools alone carry the whole experience; these mirror them.
#pragma once

#include <optional>
#include <string>

#include "broker/tools/tool.h"

namespace skillmcp {

inline constexpr size_t kMaxResourcesListed = 500;
inline constexpr const char* kResourceScheme = "skill://";

// A result, or a JSON-RPC error (code, message, optional data) for the caller to send.
struct SurfaceAnswer {
  OrderedJson result;
  // When not empty: the result as minified JSON text, and `result` is unused (the bulk
  // answer of resources/read is written straight into it; docs/performance.md).
  std::string result_json;
  int error_code = 0;  // 0: success
  std::string error_message;
  std::optional<Json> error_data;  // resources: {uri}
};

// An error answer; with `uri`, the error names it in `data` too, so a client can match it
// without parsing the message (docs/wire.md §10).
SurfaceAnswer SurfaceError(int code, std::string message, std::optional<std::string> uri = {});

// The result of an answer as JSON, whichever form it was built in.
OrderedJson SurfaceResult(const SurfaceAnswer& answer);

OrderedJson PromptsList(const CatalogueView& view);
SurfaceAnswer PromptsGet(const CatalogueView& view, const Json& params);
OrderedJson ResourcesList(const CatalogueView& view);
SurfaceAnswer ResourcesRead(const CatalogueView& view, const Json& params);

}  // namespace skillmcp
