// The run's mirror's own seccomp filter (docs/isolation.md, "Declared egress"). The mirror
// holds sockets of the egress helper's network and parses what the script sends it (DNS
// queries, tun packets, connections); its filter (seccomp/policy.h, MirrorPolicyGroups)
// leaves it no way to open or readdress a network endpoint, so a flaw in those parsers
// cannot turn a helper's socket into a way onto the helper's whole network.
#pragma once

#include <string_view>

#include "worker/step_result.h"

namespace skillmcp::worker {

// kMirrorSeccomp: loads the broker's compiled program into the calling process. Call in
// the mirror after the fork (the run's processes must not inherit it: the filter refuses
// what node needs), with no_new_privs set (kNoNewPrivs, before the fork), once the mirror
// has every socket it will make: its listeners and resolver are bound, its channel came
// with the description.
StepResult LoadMirrorFilter(std::string_view bpf);

}  // namespace skillmcp::worker
