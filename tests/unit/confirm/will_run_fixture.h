// A typical willRun for the confirm tests.
#pragma once

#include "broker/confirm/will_run.h"

namespace skillmcp::testing {

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
