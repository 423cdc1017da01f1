#include "broker/audit/audit_peer.h"

#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace skillmcp {

AuditPeer ReadAuditPeer(int fd) {
  AuditPeer peer;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred) {
    peer.uid = cred.uid;
    peer.gid = cred.gid;
    peer.pid = cred.pid;
    peer.from_socket = true;
  } else {
    peer.uid = getuid();
    peer.gid = getgid();
    peer.pid = getpid();
  }
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(peer.uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
    peer.user = found->pw_name;
  return peer;
}

}  // namespace skillmcp
