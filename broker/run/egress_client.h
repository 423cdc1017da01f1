// The broker's connection to the egress helper (skill-mcp-egress, egress/README.md): the
// only way a run's connection to a declared host is opened. Requests go out without
// waiting and answers come back on the broker's event loop, each with its connected
// socket; nothing here blocks (the helper resolves and connects in its own process).
// The helper is either one the broker started itself at boot (a socketpair end; stdio and
// the container) or the socket-activated unit's socket (a path; the systemd deployment,
// where the broker has no network of its own), connected on first use and again after
// the helper went away.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "broker/loop/event_loop.h"
#include "shared/egress_wire.h"
#include "shared/unique_fd.h"

namespace skillmcp {

inline constexpr size_t kEgressClientMaxPending = 256;

class EgressClient {
 public:
  // `answer` is called once, on the loop, with the helper's answer and, when its error
  // is 0, the connected socket; never from inside Dial.
  using Answer = std::function<void(const EgressAnswer& answer, UniqueFd socket)>;

  EgressClient(EventLoop& loop, UniqueFd connected);
  EgressClient(EventLoop& loop, std::string socket_path);
  ~EgressClient();
  EgressClient(const EgressClient&) = delete;
  EgressClient& operator=(const EgressClient&) = delete;

  // Asks for `host` on `port`; returns the request's id (to Forget it).
  uint32_t Dial(const std::string& host, uint16_t port, bool allow_local, Answer answer);
  // The answer to `id` is no longer wanted (its run ended): a socket that still comes is
  // closed.
  void Forget(uint32_t id);

  // Whether a helper is reachable now (doctor; a path is tried).
  bool Reachable();

 private:
  bool Connect();
  void OnReadable(uint32_t events);
  void Disconnect(int err);
  void Later(uint32_t id, int err);

  EventLoop& loop_;
  UniqueFd sock_;
  std::string path_;  // empty: a helper of the broker's own, never reconnected
  uint32_t next_id_ = 1;
  std::map<uint32_t, Answer> pending_;
};

}  // namespace skillmcp
