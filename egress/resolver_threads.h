// getaddrinfo blocks for as long as the host's resolver takes, so each name is resolved on
// a thread of its own, and the loop hears of each result through an eventfd. The caller
// bounds how many run at once (server.h, kMaxInFlight).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "egress/resolve.h"

namespace skillmcp::egress {

class ResolverThreads {
 public:
  // Nothing usable when the eventfd cannot be made (fd() is -1).
  ResolverThreads();

  // Readable when a result is waiting.
  int fd() const;

  // Resolves `host` for the request `key`; false when no thread could be started.
  bool Start(uint64_t key, std::string host, uint16_t port);

  // The results finished since the last call.
  std::vector<std::pair<uint64_t, Resolution>> Take();

 private:
  struct Shared;
  // Shared with the threads, which outlive nothing but may outlive the request they
  // resolve for (its broker gone): the loop then drops the result.
  std::shared_ptr<Shared> shared_;
};

}  // namespace skillmcp::egress
