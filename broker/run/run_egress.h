// One run's egress on the broker's side (the declared network mode; docs/isolation.md,
// "Declared egress"): the run's end of the egress channel (shared/egress_channel.h). For
// each connection the run's mirror asks for, the broker checks the name and port against
// the run's rules, fixed when the run was confirmed, never against anything the run says;
// asks the egress helper to open it (broker/run/egress_client.h); and hands the socket
// back. It tallies what happened for the receipt, bounded: the hosts past the receipt's
// list are counted together, never dropped. The mirror's exit closes its end, after its
// last reports: the channel's close is when the tally is whole (WhenClosed).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/loop/event_loop.h"
#include "broker/run/egress_client.h"
#include "broker/run/egress_summary.h"
#include "broker/run/network_mode.h"
#include "shared/egress_allowlist.h"
#include "shared/egress_channel.h"
#include "shared/unique_fd.h"

namespace skillmcp {

inline constexpr size_t kRunEgressMaxPending = 32;
// The hosts past the receipt's list told apart, to count them: past this many, each
// further connection to one not yet seen counts as another (never fewer than there were).
inline constexpr size_t kRunEgressOmittedTracked = 1024;

class RunEgress {
 public:
  // `client` may be null (no helper reachable at boot): every request is then refused.
  // `settings`: whether the helper may connect to non-global addresses, and the names
  // pinned to an address (SKILL_MCP_EGRESS_LOCAL, SKILL_MCP_EGRESS_RESOLVE).
  RunEgress(EventLoop& loop, EgressClient* client, std::vector<EgressRule> rules,
            const EgressSettings& settings, UniqueFd channel);
  ~RunEgress();
  RunEgress(const RunEgress&) = delete;
  RunEgress& operator=(const RunEgress&) = delete;

  // Reads everything the mirror sent and has not been read, with no bound on how many:
  // call it once the run's processes are killed, when nothing more can come.
  void Drain();
  // Whether the mirror's end is still open: more reports may come.
  bool open() const { return channel_.valid(); }
  // `done` is called once, from the loop (never from inside this object), when the
  // mirror's end has closed and everything it sent has been read.
  void WhenClosed(std::function<void()> done) { on_closed_ = std::move(done); }
  const EgressSummary& summary() const { return summary_; }

 private:
  // Reads at most `max` frames (-1: until none is left); a closed channel is Close()d.
  void Read(int max);
  void OnClosed(const EgressClosed& m);
  void Count(const std::string& host, uint16_t port, uint32_t mirror_id);
  void OnConnect(const EgressConnect& m);
  void Deny(uint32_t id, int err);
  void Refuse(EgressSummary::Refusal r);
  void Close();

  EventLoop& loop_;
  EgressClient* client_;
  std::vector<EgressRule> rules_;
  std::optional<std::vector<EgressPattern>> patterns_;  // which wildcards the operator named
  bool allow_local_;
  std::vector<std::pair<std::string, std::string>> pins_;
  UniqueFd channel_;
  std::map<uint32_t, uint32_t> dials_;  // the helper's id -> the mirror's
  std::map<uint32_t, size_t> host_of_;  // the mirror's id -> summary_.hosts index, or npos
  std::set<std::pair<std::string, uint16_t>> omitted_;  // the hosts past the list, bounded
  EgressSummary summary_;
  std::function<void()> on_closed_;
  EventLoop::TimerId closed_timer_ = 0;
};

}  // namespace skillmcp
