// The declared network mode's cell (RunSpec::egress_declared; docs/isolation.md,
// "Declared egress"). After the view's first half, while the worker still holds its
// capabilities over its user namespace, the run gets a network namespace of its own:
//   - loopback up, and nothing else routed but, where /dev/net/tun can be opened, a tun
//     device that is the default route, v4 and v6: every packet to an address outside the
//     namespace reaches the mirror, which refuses it at once and records it
//     (worker/egress_refuse.h); without it such a connect fails with ENETUNREACH, at once
//     too, unrecorded;
//   - the run's resolver: a UDP socket on 127.0.0.1:53 the mirror answers from the run's
//     allowlist (worker/egress_dns.h), named by the run's own /etc/resolv.conf, hosts and
//     nsswitch.conf, bound read-only over the host's in the view;
//   - one listening socket on 0.0.0.0 for each port the allowlist names, on which the
//     mirror accepts what the script connects to an allotted address.
// All of it is bound before the capabilities go (ports below 1024 need them), and held by
// the mirror alone (worker/egress_relay.h): the namespace's init closes its copies, node
// never has them (close-on-exec).
// It comes in two halves, so that a worker started ahead makes what no run decides while
// it waits (CellSpec::network_ahead): EnterOwnNetwork, the namespace, loopback, the tun
// route and the resolver's socket; FinishOwnNetwork, once the description names the run,
// the listeners for its rules' ports and the resolver files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// The loopback addresses the resolver allots, one per name: 127.77.0.1 and up.
inline constexpr uint32_t kEgressAllotBase = (127u << 24) | (77u << 16);
inline constexpr uint32_t kEgressAllotMax = 65000;

struct EgressCell {
  UniqueFd channel;   // to the broker (RunSpec's third descriptor)
  UniqueFd resolver;  // UDP 127.0.0.1:53
  struct Listener {
    uint16_t port = 0;
    UniqueFd fd;
  };
  std::vector<Listener> listeners;  // one per allowed port, on 0.0.0.0
  UniqueFd tun;                     // the default route's device; invalid without one
  std::vector<EgressRule> rules;
  // Where the resolver files are staged while they are bound (a writable directory of the
  // run's view: its scratch directory; "" for /tmp, the probe's).
  std::string stage_parent;
  // Closes every descriptor, in the processes that must not keep them (init).
  void CloseAll();
};

// kOwnNetwork, the first half: unshare(CLONE_NEWNET), loopback up, the tun route where it
// can be had, the resolver's socket. It needs nothing of the run: only the capabilities
// over the view's user namespace (after BeginRunView and the pid namespace, before the
// capability steps), and no path of the view's second half (/dev/net/tun is never
// covered). Sets `cell.tun` and `cell.resolver`.
StepResult EnterOwnNetwork(EgressCell& cell);

// kOwnNetwork, the second half, in the namespace EnterOwnNetwork made, with `cell.rules`
// and `cell.stage_parent` set: one listener per port the rules name, and the resolver
// files bound over the view's. After FinishRunView: the files go over the paths the host's
// names lead to in the finished view (a resolv.conf kept from /run), staged in the run's
// scratch directory, which only the description names. Before the capability steps.
StepResult FinishOwnNetwork(EgressCell& cell);

}  // namespace skillmcp::worker
