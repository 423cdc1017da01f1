// The layer of a given name in a doctor report (tests of broker/harden/layers.h).
#pragma once

#include <string>
#include <vector>

#include "broker/harden/layers.h"

namespace skillmcp::testing {

inline const Layer* Find(const std::vector<Layer>& layers, const std::string& name) {
  for (const Layer& l : layers)
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace skillmcp::testing
