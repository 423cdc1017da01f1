#include "worker/egress_cell.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "worker/exec.h"
#include "worker/ipv6_address.h"

namespace skillmcp::worker {
namespace {

constexpr char kTunName[] = "refuse0";
constexpr char kTunAddress4[] = "10.255.255.1";
constexpr char kTunAddress6[] = "fd00:5eed::1";
constexpr int kListenBacklog = 64;

// The run's resolver files: its own server, names from /etc/hosts for localhost only, and
// nothing but files and DNS for host names (no mDNS, no resolved's socket, which the view
// hides anyway).
constexpr char kResolvConf[] = "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n";
constexpr char kHosts[] = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
constexpr char kNsswitch[] =
    "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
    "protocols: files\nservices: files\nethers: files\nrpc: files\n";

StepResult Failed(int err) { return StepFailed(WorkerStep::kOwnNetwork, err); }

// `fd` moved above the bootstrap's fd, close-on-exec; invalid with errno set on failure.
// why: a worker that makes its network ahead receives 6 and 7 with its description later,
// and refuses them if those numbers are taken (EEXIST).
UniqueFd AboveLayout(UniqueFd fd) {
  if (!fd.valid()) return {};
  UniqueFd lifted(fcntl(fd.get(), F_DUPFD_CLOEXEC, kWorkerBootstrapFd + 1));
  const int err = errno;
  fd.reset();
  errno = err;
  return lifted;
}

int SetUp(int sock, const char* name) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  if (ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) return errno;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) return errno;
  return 0;
}

// The tun device as the default route, v4 and v6, with an address of its own for the
// kernel to send from. Nothing (an invalid descriptor) where the device cannot be opened
// or set up: the route is then simply absent.
UniqueFd TunRoute(int sock4) {
  UniqueFd tun = AboveLayout(UniqueFd(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC)));
  if (!tun.valid()) return {};
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, kTunName, IFNAMSIZ - 1);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (ioctl(tun.get(), TUNSETIFF, &ifr) != 0) return {};
  if (SetUp(sock4, kTunName) != 0) return {};
  ifreq addr{};
  std::strncpy(addr.ifr_name, kTunName, IFNAMSIZ - 1);
  auto* sin = reinterpret_cast<sockaddr_in*>(&addr.ifr_addr);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, kTunAddress4, &sin->sin_addr);
  if (ioctl(sock4, SIOCSIFADDR, &addr) != 0) return {};
  rtentry rt{};
  reinterpret_cast<sockaddr_in*>(&rt.rt_dst)->sin_family = AF_INET;
  reinterpret_cast<sockaddr_in*>(&rt.rt_genmask)->sin_family = AF_INET;
  rt.rt_flags = RTF_UP;
  char dev[sizeof kTunName];
  std::memcpy(dev, kTunName, sizeof kTunName);
  rt.rt_dev = dev;
  if (ioctl(sock4, SIOCADDRT, &rt) != 0) return {};
  // IPv6 where the kernel has it; a namespace without IPv6 has no v6 route to refuse.
  UniqueFd sock6(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (sock6.valid()) {
    in6_addr address{};
    inet_pton(AF_INET6, kTunAddress6, &address);
    const int index = static_cast<int>(if_nametoindex(kTunName));
    // why over rtnetlink: an address the kernel holds tentative drops the mirror's
    // refusals, and only rtnetlink can add one that is not (worker/ipv6_address.h).
    if (index == 0 || AddIpv6AddressNow(index, address, 128) != 0) return {};
    in6_rtmsg r6{};
    r6.rtmsg_flags = RTF_UP;
    r6.rtmsg_metric = 1;
    r6.rtmsg_ifindex = index;
    if (ioctl(sock6.get(), SIOCADDRT, &r6) != 0) return {};
  }
  return tun;
}

UniqueFd BoundSocket(int type, uint32_t address, uint16_t port, int& err) {
  UniqueFd fd = AboveLayout(UniqueFd(socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  if (!fd.valid()) {
    err = errno;
    return {};
  }
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(address);
  at.sin_port = htons(port);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
    err = errno;
    return {};
  }
  if (type == SOCK_STREAM && listen(fd.get(), kListenBacklog) != 0) {
    err = errno;
    return {};
  }
  return fd;
}

int WriteFile(const std::string& path, const char* text) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!fd.valid()) return errno;
  const size_t len = std::strlen(text);
  if (write(fd.get(), text, len) != static_cast<ssize_t>(len)) return errno ? errno : EIO;
  return 0;
}

// Binds the run's resolver files read-only over the view's, each at the path the host's
// name leads to in the view. A name that leads nowhere is left alone: the resolver's own
// default, without the file, is the local host (resolv.conf) or files then DNS
// (nsswitch.conf). Staged on a tmpfs of its own in `parent` (the run's scratch directory,
// which its view always leaves writable; /tmp may be covered read-only), detached once
// bound, so nothing of it stays reachable but the read-only binds.
int BindResolverFiles(const std::string& parent) {
  std::string stage_path = parent + "/.skill-mcp-resolver-XXXXXX";
  std::vector<char> buffer(stage_path.begin(), stage_path.end());
  buffer.push_back('\0');
  char* stage = buffer.data();
  if (mkdtemp(stage) == nullptr) return errno;
  int err = 0;
  if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k") != 0) {
    err = errno;
    rmdir(stage);
    return err;
  }
  const struct {
    const char* host_path;
    const char* name;
    const char* text;
  } files[] = {{"/etc/resolv.conf", "resolv.conf", kResolvConf},
               {"/etc/hosts", "hosts", kHosts},
               {"/etc/nsswitch.conf", "nsswitch.conf", kNsswitch}};
  for (const auto& f : files) {
    const std::string staged = std::string(stage) + "/" + f.name;
    if ((err = WriteFile(staged, f.text)) != 0) break;
    char* real = realpath(f.host_path, nullptr);
    if (real == nullptr) continue;
    struct stat st {};
    const bool regular = stat(real, &st) == 0 && S_ISREG(st.st_mode);
    if (regular && mount(staged.c_str(), real, nullptr, MS_BIND, nullptr) != 0) err = errno;
    // why read-only: the run's resolver names the mirror; the script may not repoint the
    // file for a child it starts (it could only repoint its own namespace's lookups, but
    // what the receipt reports must be what the resolver was asked).
    if (regular && err == 0 &&
        mount(nullptr, real, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0)
      err = errno;
    free(real);
    if (err != 0) break;
  }
  if (umount2(stage, MNT_DETACH) != 0 && err == 0) err = errno;
  rmdir(stage);
  return err;
}

}  // namespace

void EgressCell::CloseAll() {
  channel.reset();
  resolver.reset();
  tun.reset();
  listeners.clear();
}

StepResult EnterOwnNetwork(EgressCell& cell) {
  // why: a namespace with nothing but loopback is the enforcement; what the mirror and the
  // broker add is only ever a connection the broker checked.
  if (unshare(CLONE_NEWNET) != 0) return Failed(errno);
  UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Failed(errno);
  if (int e = SetUp(sock.get(), "lo"); e != 0) return Failed(e);
  cell.tun = TunRoute(sock.get());
  int err = 0;
  cell.resolver = BoundSocket(SOCK_DGRAM, INADDR_LOOPBACK, 53, err);
  if (!cell.resolver.valid()) return Failed(err);
  return StepOk();
}

StepResult FinishOwnNetwork(EgressCell& cell) {
  int err = 0;
  std::vector<uint16_t> ports;
  for (const EgressRule& rule : cell.rules)
    ports.insert(ports.end(), rule.ports.begin(), rule.ports.end());
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  for (uint16_t port : ports) {
    UniqueFd fd = BoundSocket(SOCK_STREAM, INADDR_ANY, port, err);
    if (!fd.valid()) return Failed(err);
    cell.listeners.push_back({port, std::move(fd)});
  }
  if (int e = BindResolverFiles(cell.stage_parent.empty() ? "/tmp" : cell.stage_parent); e != 0)
    return Failed(e);
  return StepOk();
}

}  // namespace skillmcp::worker
