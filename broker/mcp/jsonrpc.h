// JSON-RPC 2.0 message classification, pure (no I/O); the error codes are in
// broker/protocol/error_codes.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker/protocol/error_codes.h"

namespace skillmcp {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

namespace rpc {
inline constexpr size_t kMaxNestingDepth = 64;
}  // namespace rpc

struct RpcMessage {
  enum class Kind { kRequest, kNotification, kResponse, kInvalid };
  Kind kind = Kind::kInvalid;
  Json id;              // request/response id (string or integer); null when unknown
  std::string method;   // requests and notifications
  Json params;          // object or absent (null)
  Json result;          // responses
  Json error;           // error responses
  int error_code = 0;   // kInvalid: the code to answer with
  std::string error_message;
};

// Classifies one line. Never throws. Nesting deeper than kMaxNestingDepth is refused
// before the JSON parser runs.
RpcMessage ParseRpcLine(std::string_view line);

// One line holding a JSON-RPC batch (a JSON array), as 2025-03-26 allows. `refusal` set:
// the line as a whole is answered with that error (unparsable, empty, too many entries);
// else one message per entry, in order, each classified as ParseRpcLine would.
struct RpcBatch {
  std::optional<RpcMessage> refusal;
  std::vector<RpcMessage> messages;
};
// Whether the line's first non-blank character opens an array.
bool LooksLikeBatch(std::string_view line);
// Never throws; refuses more than `max_entries` entries before classifying any.
RpcBatch ParseRpcBatch(std::string_view line, size_t max_entries);

// Depth of [ and { nesting outside strings (pure text scan).
size_t JsonNestingDepth(std::string_view text);

OrderedJson MakeResult(const Json& id, OrderedJson result);
OrderedJson MakeError(const Json& id, int code, std::string_view message,
                      std::optional<Json> data = std::nullopt);

// Serialises one message as a single line; invalid UTF-8 in strings becomes U+FFFD.
std::string SerializeLine(const OrderedJson& message);

// A result line in three parts, so a multi-MiB `result` (already minified JSON text) is
// written without being copied: ResultLineHead(id) + result + kResultLineTail is byte for
// byte SerializeLine(MakeResult(id, <the parsed result>)).
std::string ResultLineHead(const Json& id);
inline constexpr std::string_view kResultLineTail = "}\n";

}  // namespace skillmcp
