// The helper's command line: where its brokers come from and how long a request may take.
#pragma once

#include <optional>
#include <string>

namespace skillmcp::egress {

inline constexpr int kDefaultConnectTimeoutMs = 5000;
// Resolution and every connect attempt of one request, together.
inline constexpr int kDefaultRequestTimeoutMs = 15000;
inline constexpr int kMaxTimeoutMs = 600000;

struct Options {
  // A connected SOCK_SEQPACKET socket from a broker that started the helper itself; the
  // helper exits when it closes. Without it, the listening socket of socket activation.
  std::optional<int> connection_fd;
  int connect_timeout_ms = kDefaultConnectTimeoutMs;  // per address tried
  int request_timeout_ms = kDefaultRequestTimeoutMs;  // per request, all addresses
  bool help = false;
};

// Parses argv; on an error, nothing, and `error` says which argument and why.
std::optional<Options> ParseOptions(int argc, const char* const* argv, std::string* error);

// The --help text.
const char* UsageText();

}  // namespace skillmcp::egress
