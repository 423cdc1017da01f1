#include "egress/options.h"

#include <charconv>
#include <string_view>

namespace skillmcp::egress {
namespace {

std::optional<int> ParseInt(std::string_view text, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    return std::nullopt;
  return value;
}

}  // namespace

const char* UsageText() {
  return "usage: skill-mcp-egress [--connection-fd N] [--connect-timeout-ms MS]\n"
         "                        [--request-timeout-ms MS]\n"
         "\n"
         "Opens outbound TCP connections for skill-mcp brokers and hands back the connected\n"
         "socket. Started by systemd socket activation (one SOCK_SEQPACKET listening socket\n"
         "on fd 3), or by a broker with --connection-fd.\n"
         "\n"
         "  --connection-fd N         serve the connected SOCK_SEQPACKET socket N, exit when\n"
         "                            it closes\n"
         "  --connect-timeout-ms MS   how long one address may take to connect (1..600000,\n"
         "                            default 5000)\n"
         "  --request-timeout-ms MS   how long one request may take, resolution and every\n"
         "                            address together (1..600000, default 15000)\n"
         "  --help                    this text\n";
}

std::optional<Options> ParseOptions(int argc, const char* const* argv, std::string* error) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help") {
      options.help = true;
      continue;
    }
    if (arg != "--connection-fd" && arg != "--connect-timeout-ms" &&
        arg != "--request-timeout-ms") {
      *error = "unknown argument: " + std::string(arg);
      return std::nullopt;
    }
    if (i + 1 >= argc) {
      *error = std::string(arg) + " needs a value";
      return std::nullopt;
    }
    const std::string_view value = argv[++i];
    if (arg == "--connection-fd") {
      // 0..2 are stdio: a broker never hands its connection over as one of them.
      const std::optional<int> fd = ParseInt(value, 3, 1 << 20);
      if (!fd) {
        *error = "--connection-fd: not a descriptor number from 3: " + std::string(value);
        return std::nullopt;
      }
      options.connection_fd = *fd;
    } else {
      const std::optional<int> ms = ParseInt(value, 1, kMaxTimeoutMs);
      if (!ms) {
        *error = std::string(arg) +
                 ": not a number of milliseconds from 1 to 600000: " + std::string(value);
        return std::nullopt;
      }
      (arg == "--connect-timeout-ms" ? options.connect_timeout_ms : options.request_timeout_ms) =
          *ms;
    }
  }
  return options;
}

}  // namespace skillmcp::egress
