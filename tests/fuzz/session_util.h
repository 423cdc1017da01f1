// Helpers for the targets that talk to a whole fuzz::Server over its wire.
#pragma once

#include <string>
#include <vector>

#include "tests/fuzz/rig.h"

namespace skillmcp::fuzz {

// initialize declaring elicitation, then a skill_run for the demo script with id 2.
inline constexpr const char* kOpenPrompt =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{\"elicitation\":{}}}}\n"
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"skill_run\","
    "\"arguments\":{\"name\":\"demo\",\"script\":\"scripts/run.js\",\"args\":[\"a\"]}}}\n";
inline constexpr const char* kPromptId = "skill-mcp-1";

// The answers (result or error) whose id is `id`.
inline std::vector<Json> AnswersTo(const std::vector<Json>& lines, const Json& id) {
  std::vector<Json> out;
  for (const Json& line : lines) {
    if (line.contains("method")) continue;  // a request of the server's own
    if (line.contains("id") && line["id"] == id) out.push_back(line);
  }
  return out;
}

// Starts the prompt for request 2 and checks the server asked exactly that.
inline bool OpenPrompt(Server& server) {
  if (!server.ok() || !server.Feed(kOpenPrompt)) return false;
  std::vector<Json> out = server.TakeOutput();
  size_t prompts = 0;
  for (const Json& line : out) {
    if (line.value("method", "") == "elicitation/create" && line["id"] == kPromptId) ++prompts;
  }
  if (prompts != 1 || !AnswersTo(out, Json(2)).empty()) __builtin_trap();
  return true;
}

}  // namespace skillmcp::fuzz
