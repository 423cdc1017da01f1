// Logging to stderr only: stdout carries JSON-RPC and nothing else, ever.
// LOG_* are printf-checked; LOG_ERRNO appends strerror(errno).
#pragma once

#include <cerrno>

namespace skillmcp::log {

enum class Level { kInfo, kWarn, kError };

[[gnu::format(printf, 3, 4)]] void Write(Level level, int err, const char* fmt, ...);

}  // namespace skillmcp::log

#define LOG_INFO(...) do { ::skillmcp::log::Write(::skillmcp::log::Level::kInfo, 0, __VA_ARGS__); } while (0)
#define LOG_WARN(...) do { ::skillmcp::log::Write(::skillmcp::log::Level::kWarn, 0, __VA_ARGS__); } while (0)
#define LOG_ERROR(...) do { ::skillmcp::log::Write(::skillmcp::log::Level::kError, 0, __VA_ARGS__); } while (0)
#define LOG_WARN_ERRNO(...) do { int e_ = errno; ::skillmcp::log::Write(::skillmcp::log::Level::kWarn, e_, __VA_ARGS__); } while (0)
#define LOG_ERROR_ERRNO(...) do { int e_ = errno; ::skillmcp::log::Write(::skillmcp::log::Level::kError, e_, __VA_ARGS__); } while (0)
