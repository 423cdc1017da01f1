#include "broker/mcp/jsonrpc.h"

namespace skillmcp {

size_t JsonNestingDepth(std::string_view text) {
  size_t depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return max_depth;
}

namespace {

RpcMessage Invalid(Json id, int code, std::string message) {
  RpcMessage m;
  m.kind = RpcMessage::Kind::kInvalid;
  m.id = std::move(id);
  m.error_code = code;
  m.error_message = std::move(message);
  return m;
}

bool ValidId(const Json& id) { return id.is_string() || id.is_number_integer(); }

// Why: the depth check runs on raw text first, so hostile nesting never reaches a
// parser or a recursive destructor. nullopt: `line` parsed into `out`.
std::optional<RpcMessage> ParseJson(std::string_view line, Json* out) {
  if (JsonNestingDepth(line) > rpc::kMaxNestingDepth) {
    return Invalid(nullptr, rpc::kParseError,
                   "message nests deeper than " + std::to_string(rpc::kMaxNestingDepth) +
                       " levels; send a flatter message");
  }
  *out = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    return Invalid(nullptr, rpc::kParseError,
                   "message is not valid JSON (or not valid UTF-8); send one JSON-RPC "
                   "object per line");
  }
  return std::nullopt;
}

RpcMessage Classify(Json j) {
  if (!j.is_object()) {
    return Invalid(nullptr, rpc::kInvalidRequest, "a JSON-RPC message must be an object");
  }
  Json id = j.contains("id") ? j["id"] : Json();
  Json reply_id = ValidId(id) ? id : Json();
  auto version = j.find("jsonrpc");
  if (version == j.end() || *version != "2.0") {
    return Invalid(reply_id, rpc::kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  }
  RpcMessage m;
  auto method = j.find("method");
  if (method != j.end()) {
    if (!method->is_string()) {
      return Invalid(reply_id, rpc::kInvalidRequest, "\"method\" must be a string");
    }
    if (j.contains("id") && !ValidId(id)) {
      return Invalid(nullptr, rpc::kInvalidRequest, "\"id\" must be a string or an integer");
    }
    m.method = method->get<std::string>();
    auto params = j.find("params");
    if (params != j.end() && !params->is_null()) {
      if (!params->is_object()) {
        return Invalid(reply_id, rpc::kInvalidRequest, "\"params\" must be an object");
      }
      m.params = std::move(*params);
    }
    m.kind = j.contains("id") ? RpcMessage::Kind::kRequest : RpcMessage::Kind::kNotification;
    m.id = id;
    return m;
  }
  if (j.contains("result") || j.contains("error")) {
    m.kind = RpcMessage::Kind::kResponse;
    m.id = id;
    if (auto r = j.find("result"); r != j.end()) m.result = std::move(*r);
    if (auto e = j.find("error"); e != j.end()) m.error = std::move(*e);
    return m;
  }
  return Invalid(reply_id, rpc::kInvalidRequest,
                 "message has neither \"method\" nor \"result\"/\"error\"");
}

}  // namespace

RpcMessage ParseRpcLine(std::string_view line) {
  Json j;
  if (auto refused = ParseJson(line, &j)) return *refused;
  if (j.is_array()) {
    return Invalid(nullptr, rpc::kInvalidRequest,
                   "JSON-RPC batches are only accepted under protocol version 2025-03-26; "
                   "send one message per line");
  }
  return Classify(std::move(j));
}

bool LooksLikeBatch(std::string_view line) {
  size_t at = line.find_first_not_of(" \t\r\n");
  return at != std::string_view::npos && line[at] == '[';
}

RpcBatch ParseRpcBatch(std::string_view line, size_t max_entries) {
  RpcBatch batch;
  Json j;
  if (auto refused = ParseJson(line, &j)) {
    batch.refusal = std::move(*refused);
    return batch;
  }
  if (!j.is_array()) {
    batch.messages.push_back(Classify(std::move(j)));
    return batch;
  }
  if (j.empty()) {
    batch.refusal = Invalid(nullptr, rpc::kInvalidRequest, "an empty JSON-RPC batch is invalid");
    return batch;
  }
  // Why a bound: every entry's answer is held until the last one is ready, so the entries
  // of one line may not multiply the work and memory one line can ask for.
  if (j.size() > max_entries) {
    batch.refusal = Invalid(
        nullptr, rpc::kInvalidRequest,
        "a JSON-RPC batch may hold at most " + std::to_string(max_entries) + " messages; split it");
    return batch;
  }
  batch.messages.reserve(j.size());
  for (Json& entry : j) batch.messages.push_back(Classify(std::move(entry)));
  return batch;
}

OrderedJson MakeResult(const Json& id, OrderedJson result) {
  OrderedJson m;
  m["jsonrpc"] = "2.0";
  m["id"] = id;
  m["result"] = std::move(result);
  return m;
}

OrderedJson MakeError(const Json& id, int code, std::string_view message,
                      std::optional<Json> data) {
  OrderedJson err;
  err["code"] = code;
  err["message"] = std::string(message);
  if (data) err["data"] = *data;
  OrderedJson m;
  m["jsonrpc"] = "2.0";
  m["id"] = id;
  m["error"] = std::move(err);
  return m;
}

std::string ResultLineHead(const Json& id) {
  return R"({"jsonrpc":"2.0","id":)" +
         id.dump(-1, ' ', false, Json::error_handler_t::replace) + R"(,"result":)";
}

std::string SerializeLine(const OrderedJson& message) {
  std::string s = message.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  s.push_back('\n');
  return s;
}

}  // namespace skillmcp
