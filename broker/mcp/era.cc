#include "broker/mcp/era.h"

namespace skillmcp {

Envelope ReadEnvelope(const Json& params) {
  Envelope e;
  if (!params.is_object()) return e;
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return e;
  auto version = meta->find(std::string(kProtocolVersionKey));
  if (version == meta->end()) return e;
  // Why malformed, not legacy: a request that names a revision key at all means the 2026
  // lifecycle, and a value nobody can compare must not be served under a guessed one.
  if (!version->is_string()) {
    e.kind = Envelope::Kind::kMalformed;
    e.problem = std::string("_meta[\"") + std::string(kProtocolVersionKey) + "\"] must be a string";
    return e;
  }
  std::string v = version->get<std::string>();
  if (v != kModernRevision) {
    e.kind = Envelope::Kind::kUnsupported;
    e.requested = std::move(v);
    return e;
  }
  auto caps = meta->find(std::string(kClientCapabilitiesKey));
  if (caps == meta->end() || !caps->is_object()) {
    e.kind = Envelope::Kind::kMalformed;
    e.problem = std::string("_meta[\"") + std::string(kClientCapabilitiesKey) +
                "\"] is required on every 2026-07-28 request and must be an object";
    return e;
  }
  e.kind = Envelope::Kind::kModern;
  e.capabilities = *caps;
  return e;
}

std::optional<int64_t> CacheTtlMs(std::string_view method, bool lists_may_change) {
  // Why these values: without the live catalogue the skills are read once at start
  // (docs/architecture.md, "Start"), so lists may be kept for an hour; with it a list may
  // change at any moment and 2026-07-28 has no notification here to say so (docs/wire.md
  // §8), so they are not kept. A file may change under a running server (§9), so reads are
  // never cached.
  constexpr int64_t kFixedForProcess = 3600000;
  if (method == "tools/list" || method == "prompts/list" || method == "resources/list") {
    return lists_may_change ? 0 : kFixedForProcess;
  }
  if (method == "resources/templates/list" || method == "server/discover") {
    return kFixedForProcess;
  }
  if (method == "resources/read") return 0;
  // Why 0 here too: the extension's other answers promise no freshness (Cacheable in
  // broker/tools/skills_ext.cc), and its own result writes no cache hints, which 2026-07-28
  // requires of it; the 2025 answer stays as it was.
  if (method == "resources/directory/read") return 0;
  return std::nullopt;
}

bool WritesOwnResultType(std::string_view method) {
  return method == "skills/list" || method == "skills/get" || method == "resources/directory/read";
}

std::string ResultStampFields(std::string_view result_type, std::optional<int64_t> ttl_ms,
                              const Json& server_info) {
  std::string out;
  if (!result_type.empty()) out = R"("resultType":)" + Json(std::string(result_type)).dump() + ",";
  if (ttl_ms) {
    // Why private: answers depend on this host's roots, grants and gate settings.
    out += R"("ttlMs":)" + std::to_string(*ttl_ms) + R"(,"cacheScope":"private",)";
  }
  Json meta = {{std::string(kServerInfoKey), server_info}};
  out += R"("_meta":)" + meta.dump(-1, ' ', false, Json::error_handler_t::replace);
  return out;
}

std::string PrependFields(std::string_view fields, std::string_view object_json) {
  if (fields.empty() || object_json.empty() || object_json.front() != '{') {
    return std::string(object_json);
  }
  std::string out = "{";
  out += fields;
  std::string_view rest = object_json.substr(1);
  if (!rest.empty() && rest.front() != '}') out += ',';
  out += rest;
  return out;
}

}  // namespace skillmcp
