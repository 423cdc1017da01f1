// The JSON-RPC 2.0 and MCP error codes, in a header of their own so that the tools answer
// with them without depending on the protocol layer above them (broker/mcp).
#pragma once

namespace skillmcp::rpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kResourceNotFound = -32002;  // MCP 2025: a missing resource
// MCP 2026-07-28 (docs/wire.md §8): a capability the request needed was not declared, and
// a protocol version this server does not serve.
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

}  // namespace skillmcp::rpc
