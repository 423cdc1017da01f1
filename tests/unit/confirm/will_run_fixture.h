// A typical willRun and the injected clock for the confirm tests.
#pragma once

#include <cstdint>

#include "broker/confirm/will_run.h"

namespace skillmcp::testing {

// The clock the tests inject (seconds) and the tokens' lifetime.
inline constexpr int64_t kNow = 1'800'000'000;
inline constexpr int64_t kTtl = 600;

inline WillRun SampleWillRun() {
  WillRun run;
  run.skill = "weather";
  run.interpreter = "node";
  run.argv = {"scripts/forecast.js", "--city", "Lisbon"};
  run.cwd = "/srv/skills/weather";
  run.timeout_ms = 30000;
  run.env_names = {"HOME", "PATH", "WEATHER_API_KEY"};
  return run;
}

}  // namespace skillmcp::testing
