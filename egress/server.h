// The helper's one epoll loop: brokers' requests in, answers (with the connected socket)
// out, names resolved on threads (resolver_threads.h) and connections attempted without
// blocking (dial.h). Everything it holds is bounded: brokers, requests in flight, answers
// waiting for a broker that does not read.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>

#include "egress/dial.h"
#include "egress/host_addresses.h"
#include "egress/resolver_threads.h"
#include "shared/egress_wire.h"
#include "shared/unique_fd.h"

namespace skillmcp::egress {

// Requests resolving or connecting at once, across all brokers; one more is answered
// EAGAIN. Each holds at most one thread and one socket.
inline constexpr size_t kMaxInFlight = 64;
// Requests of one broker in flight at once; one more is answered EAGAIN. why: a broker
// whose runs' names stall (a name server that never answers) fills its own share only,
// never the places of the other brokers of a shared helper.
inline constexpr size_t kMaxInFlightPerBroker = 16;
// Brokers served at once (socket activation); one more is closed at once.
inline constexpr size_t kMaxBrokers = 64;
// How long a broker may leave an answer unread before it is dropped: the helper stops
// reading a broker's requests while its answers wait, so what waits is bounded by the
// requests it had in flight, and this bounds how long they hold their sockets.
inline constexpr int64_t kStalledBrokerMs = 10000;

class Server {
 public:
  // `listen_fd`: accept brokers on it (socket activation); else `connection_fd` is the one
  // broker, and Run returns when it is gone.
  Server(int listen_fd, int connection_fd, int connect_timeout_ms, int request_timeout_ms);

  // 0 when the one broker is gone; 1 (logged) when the loop itself cannot go on.
  int Run();

 private:
  struct Outgoing {
    char bytes[kEgressAnswerBytes];
    UniqueFd fd;
  };
  struct Broker {
    UniqueFd fd;
    std::deque<Outgoing> out;
    int64_t blocked_since_ms = -1;  // -1: its answers are all sent
  };
  struct Request {
    uint64_t broker = 0;  // 0 once the broker is gone (its name still resolving)
    uint32_t id = 0;
    bool allow_local = false;
    bool pinned = false;  // an address literal: the operator's pin (dial.h)
    // Resolution and every connect attempt end by then (ETIMEDOUT).
    int64_t deadline_ms = 0;
    // Answered ETIMEDOUT while its name was still resolving: the thread still runs, so the
    // request keeps its place (in its broker's share too) until the resolver returns.
    bool answered = false;
    std::optional<Dial> dial;
  };

  bool Watch(int op, int fd, uint32_t events, uint64_t tag);
  void AddBroker(UniqueFd fd);
  void DropBroker(uint64_t key);
  void Accept(int64_t now);
  void ReadBroker(uint64_t key, int64_t now);
  void Handle(uint64_t broker, const EgressRequest& request, int64_t now);
  void Answer(uint64_t broker, const EgressAnswer& answer, UniqueFd fd);
  void Flush(uint64_t key, int64_t now);
  void Resolved(int64_t now);
  void StartDial(uint64_t key, Resolution resolution, int64_t now);
  void DialEvent(uint64_t key, bool timed_out, int64_t now);
  void FinishDial(uint64_t key);
  void Expire(int64_t now);
  size_t InFlight(uint64_t broker) const;
  int NextTimeout(int64_t now) const;

  UniqueFd epoll_;
  UniqueFd listen_;
  bool single_;
  int connect_timeout_ms_;
  int request_timeout_ms_;
  int64_t accept_paused_until_ms_ = -1;
  ResolverThreads resolver_;
  HostAddressCache host_addresses_;
  uint64_t next_key_ = 1;
  std::map<uint64_t, Broker> brokers_;
  std::map<uint64_t, Request> requests_;
};

}  // namespace skillmcp::egress
