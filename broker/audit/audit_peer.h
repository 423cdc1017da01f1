// Who a connection's records name (docs/audit.md, "Who"): the peer of the socket the
// connection came on, and the client as it named itself.
#pragma once

#include <string>

#include "broker/audit/audit_record.h"

namespace skillmcp {

// SO_PEERCRED of `fd` when it is a socket (systemd Accept=yes hands the connection as
// stdin), else this process's own uid, gid and pid (stdio: the broker runs as its
// client's user). The user name is looked up once, here: call it before the loop starts.
AuditPeer ReadAuditPeer(int fd);

// One connection's part of every record: set at start (peer) and by initialize, or a
// 2026-07-28 request's _meta (client).
struct AuditConnection {
  AuditPeer peer;
  std::string client_name, client_version;
};

}  // namespace skillmcp
