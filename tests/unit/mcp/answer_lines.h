// What the session tests share: reading everything a server wrote to a non-blocking pipe,
// and parsing it as the JSON-RPC lines a client would see.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "broker/mcp/jsonrpc.h"

namespace skillmcp::testing {

// Appends to `out` everything readable now from the non-blocking `fd`.
inline void ReadAvailable(int fd, std::string* out) {
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(n));
}

// Every complete line of `all`, parsed (a line that is not JSON throws).
inline std::vector<Json> ParseLines(const std::string& all) {
  std::vector<Json> out;
  size_t start = 0, nl;
  while ((nl = all.find('\n', start)) != std::string::npos) {
    out.push_back(Json::parse(all.substr(start, nl - start)));
    start = nl + 1;
  }
  return out;
}

// What `fd` holds now, as lines.
inline std::vector<Json> ReadAnswers(int fd) {
  std::string all;
  ReadAvailable(fd, &all);
  return ParseLines(all);
}

}  // namespace skillmcp::testing
