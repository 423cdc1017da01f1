// The prose of a hardening step's outcome: what it did or could not do, part by part.
#pragma once

#include <string>

namespace skillmcp {

// Adds `more` to `detail`, after "; " when `detail` already says something.
inline void AppendDetail(std::string& detail, const std::string& more) {
  if (!detail.empty()) detail += "; ";
  detail += more;
}

}  // namespace skillmcp
