// CLOCK_MONOTONIC in milliseconds: deadlines that a change of the wall clock cannot move.
#pragma once

#include <time.h>

#include <cstdint>

namespace skillmcp {

inline int64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace skillmcp
