// One run's egress on the broker's side (the declared network mode; docs/isolation.md,
// "Declared egress"): the run's end of the egress channel (shared/egress_channel.h). For
// each connection the run's mirror asks for, the broker checks the name and port against
// the run's rules, fixed when the run was confirmed, never against anything the run says;
// asks the egress helper to open it (broker/run/egress_client.h); and hands the socket
// back. It tallies what happened for the receipt, bounded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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

  // Reads what the mirror sent and has not been read (the run ended: the last counts).
  void Drain();
  const EgressSummary& summary() const { return summary_; }

 private:
  void OnReadable(uint32_t events);
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
  std::map<uint32_t, uint32_t> dials_;   // the helper's id -> the mirror's
  std::map<uint32_t, size_t> host_of_;   // the mirror's id -> summary_.hosts index
  EgressSummary summary_;
};

}  // namespace skillmcp
