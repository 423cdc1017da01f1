// The 2026-07-28 revision beside the 2025 ones on one stdio connection (docs/wire.md §8):
// what a request's `_meta` envelope says, and the fields every 2026 result carries. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "broker/mcp/jsonrpc.h"

namespace skillmcp {

inline constexpr std::string_view kModernRevision = "2026-07-28";
inline constexpr std::string_view kProtocolVersionKey = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kClientCapabilitiesKey =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kServerInfoKey = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view kClientInfoKey = "io.modelcontextprotocol/clientInfo";

// What `params._meta` of one request says about its revision.
struct Envelope {
  enum class Kind {
    kNone,         // no protocol version in _meta: a 2025-era request
    kModern,       // 2026-07-28, with its client capabilities
    kUnsupported,  // a version string this server does not serve (`requested`)
    kMalformed,    // names a version but the envelope is unusable (`problem`)
  };
  Kind kind = Kind::kNone;
  std::string requested;  // kUnsupported: the version asked for
  std::string problem;    // kMalformed: which field is wrong, for the -32602 message
  Json capabilities;      // kModern: io.modelcontextprotocol/clientCapabilities
};

// Never throws, whatever `params` holds.
Envelope ReadEnvelope(const Json& params);

// Whether a 2026 result of `method` carries ttlMs and cacheScope, and how long it may be
// cached. nullopt: not cacheable. `lists_may_change`: the live catalogue is on.
std::optional<int64_t> CacheTtlMs(std::string_view method, bool lists_may_change = false);

// The Skills over MCP methods, whose results carry resultType in every era
// (broker/tools/skills_ext.h), and skills/list and skills/get also ttlMs and cacheScope:
// a 2026 answer adds _meta, and resources/directory/read the cache hints (CacheTtlMs).
bool WritesOwnResultType(std::string_view method);

// The fields written first in a 2026 result object, as JSON members without the braces:
// resultType (`result_type`, unless empty), then ttlMs and cacheScope when `ttl_ms` is
// set, then _meta[io.modelcontextprotocol/serverInfo].
std::string ResultStampFields(std::string_view result_type, std::optional<int64_t> ttl_ms,
                              const Json& server_info);

// `object_json` (a minified JSON object) with `fields` written first.
std::string PrependFields(std::string_view fields, std::string_view object_json);

}  // namespace skillmcp
