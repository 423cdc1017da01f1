// The declared network mode's mirror side (worker/egress_cell.h holds what it serves).
// The mirror, outside the run's pid namespace where the script cannot see or signal it,
// answers the run's resolver from the allowlist, accepts what the script connects to an
// allotted address, asks the broker for each such connection over the egress channel
// (shared/egress_channel.h), and moves the bytes between the script's socket and the one
// the broker sends back (splice through a pipe each way, counted). What it refuses on its
// own (names, packets on the tun route, an allotted address on a port not allowed) is
// refused at once and reported to the broker for the receipt. When the run ends (Finish)
// every connection still open is reported as a close reports it, and the reports go before
// the mirror exits: the receipt's byte counts are whole.
// Bounded: concurrent connections (by the run's descriptor limit too), names allotted,
// reports sent, the work done per wake, and the time the run's end may take.
#pragma once

#include <poll.h>

#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "worker/egress_cell.h"
#include "worker/egress_outbox.h"

namespace skillmcp::worker {

inline constexpr size_t kEgressMaxConnections = 32;
inline constexpr size_t kEgressMaxReports = 256;
// Refusals past those told apart by their hash only, to count them once each.
inline constexpr size_t kEgressMaxUntoldKept = 16384;
// At the run's end: how long what the script wrote before it ended may take to reach its
// hosts, and then how long the last reports may wait for the broker to read them.
inline constexpr int64_t kEgressFinishForwardMs = 500;
inline constexpr int64_t kEgressFinishReportMs = 1000;

class EgressRelay {
 public:
  explicit EgressRelay(EgressCell cell);
  EgressRelay(const EgressRelay&) = delete;
  EgressRelay& operator=(const EgressRelay&) = delete;

  // Appends what to wait for; Handle takes poll's answer for the same entries, from
  // index `first` on.
  void Collect(std::vector<pollfd>& fds);
  void Handle(const std::vector<pollfd>& fds, size_t first);
  // The run's processes are gone: forwards what the script wrote before it ended (bounded
  // by kEgressFinishForwardMs), reports every connection still open with its counts and
  // the refusals not detailed, and sends every report (bounded by kEgressFinishReportMs).
  void Finish();

 private:
  struct Direction {
    UniqueFd pipe_r, pipe_w;
    size_t queued = 0;
    // The last splice into the pipe would block with bytes still queued: the pipe may be
    // full (a pipe's slots fill before its bytes do), so the source is not polled until
    // some of it has drained, or poll would report it readable on every wake.
    bool pipe_full = false;
    bool src_eof = false;
    bool shut = false;
    uint64_t bytes = 0;
  };
  struct Connection {
    uint32_t id = 0;
    UniqueFd client, upstream;
    Direction up, down;  // client -> upstream, upstream -> client
    bool failed = false;
    bool Done() const { return failed || (up.shut && down.shut); }
  };
  struct Pending {
    UniqueFd client;
  };

  void OnResolver();
  void OnListener(const EgressCell::Listener& listener);
  void OnChannel();
  void OnTun();
  void Pump(Connection& c);
  bool Pump(Direction& d, int src, int dst, bool& failed);
  void Close(Connection& c);
  void Report(const std::string& kind, const std::string& target, uint16_t port);
  bool Send(const std::string& frame);
  bool Allowed(const std::string& name) const;
  std::optional<uint32_t> Allot(const std::string& name);
  size_t Busy() const { return pending_.size() + connections_.size(); }
  bool Forwarding() const;

  EgressCell cell_;
  size_t max_connections_ = kEgressMaxConnections;
  bool channel_open_ = true;
  EgressOutbox outbox_;
  uint32_t untold_ = 0;  // refusals past kEgressMaxReports different ones, not detailed
  std::unordered_set<uint64_t> untold_seen_;
  uint32_t next_id_ = 1;
  std::map<std::string, uint32_t> allotted_;  // name -> address (host order)
  std::map<uint32_t, std::string> names_;     // address -> name
  std::map<uint32_t, Pending> pending_;       // by id: asked of the broker
  std::list<Connection> connections_;
  std::set<std::string> reported_;
  // Where each Collect entry came from, for Handle.
  enum class Source { kResolver, kListener, kChannel, kTun, kClient, kUpstream };
  struct Entry {
    Source source;
    size_t listener = 0;
    Connection* connection = nullptr;
  };
  std::vector<Entry> entries_;
};

}  // namespace skillmcp::worker
