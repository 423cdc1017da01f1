#include "worker/spec_input.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace skillmcp::worker {
namespace {

constexpr int kLiftFloor = 10;  // above the 0..7 layout while the received fds are placed

StepResult Fail(int err) { return StepFailed(WorkerStep::kReadSpec, err); }

// Whether 6 or 7 was inherited (checked before anything is received, which may land there).
bool RunSlotsInherited() {
  return fcntl(kWorkerScriptFd, F_GETFD) >= 0 || fcntl(kWorkerSkillDirFd, F_GETFD) >= 0;
}

// Places the two descriptors a started-ahead worker receives with its description
// (shared/worker_protocol.h) at 6 (script) and 7 (skill directory). They may have landed
// on 6 or 7 themselves: each is lifted above the layout first.
StepResult PlaceReceived(const int* got) {
  int lifted[2] = {-1, -1};
  StepResult result = StepOk();
  for (int i = 0; i < 2 && !result; ++i) {
    lifted[i] = fcntl(got[i], F_DUPFD_CLOEXEC, kLiftFloor);
    if (lifted[i] < 0) result = Fail(errno);
  }
  for (int i = 0; i < 2; ++i) close(got[i]);
  const int slots[2] = {kWorkerScriptFd, kWorkerSkillDirFd};
  for (int i = 0; i < 2 && !result; ++i) {
    if (dup2(lifted[i], slots[i]) < 0) result = Fail(errno);  // dup2 clears close-on-exec
  }
  for (int fd : lifted)
    if (fd >= 0) close(fd);
  return result;
}

// What a description brought over the socket: the script, the skill directory and, in the
// declared network mode, the egress channel (shared/worker_protocol.h).
struct Received {
  int fds[3] = {-1, -1, -1};
  size_t count = 0;  // 0 (nothing yet), 2 or 3
  void CloseAll() {
    for (size_t i = 0; i < count; ++i) close(fds[i]);
    count = 0;
  }
};

// One recvmsg: the bytes, and at most one SCM_RIGHTS message of two or three descriptors
// over the whole stream (`got` filled once). Anything else fails the step.
ssize_t ReceiveSome(int fd, char* buf, size_t len, Received& got, int& err) {
  // Room for more than the protocol's three, so that a wrong count is seen and every
  // descriptor that came is closed; the kernel never fills more than the buffer holds
  // (CMSG_SPACE rounds up, so the real room is kRoom, computed from the buffer).
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))];
  constexpr size_t kRoom = (sizeof control - CMSG_LEN(0)) / sizeof(int);
  iovec iov{buf, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) {
    err = errno;
    return n;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    if (count > kRoom) count = kRoom;  // cannot be: the kernel fills at most the buffer
    int fds[kRoom];
    std::memcpy(fds, CMSG_DATA(c), count * sizeof(int));
    // why: exactly the script and the skill directory (and the egress channel), once; a
    // fourth descriptor or a second message is not this protocol, and whatever came is
    // closed.
    if ((count != 2 && count != 3) || got.count != 0) {
      for (size_t i = 0; i < count; ++i) close(fds[i]);
      err = EBADMSG;
      return -1;
    }
    std::memcpy(got.fds, fds, count * sizeof(int));
    got.count = count;
  }
  if (msg.msg_flags & MSG_CTRUNC) {  // more descriptors than the buffer held: refused
    err = EBADMSG;
    return -1;
  }
  return n;
}

// Exactly `len` bytes, no descriptor with them (the cell part is bytes only).
StepResult ReceiveExactly(int fd, char* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    Received got;
    int err = 0;
    const ssize_t n = ReceiveSome(fd, buf + done, len - done, got, err);
    // why: the script and skill directory belong to the run, never to its cell.
    if (got.count != 0) {
      got.CloseAll();
      return Fail(EBADMSG);
    }
    if (n < 0 && err == EINTR) continue;
    if (n < 0) return Fail(err);
    if (n == 0) return Fail(EPIPE);  // the broker went away before the cell was whole
    done += static_cast<size_t>(n);
  }
  return StepOk();
}

}  // namespace

StepResult ReadCellSpec(int fd, CellSpec& cell, std::optional<RunSpec>& whole) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Fail(errno);
  if (!S_ISSOCK(st.st_mode)) {
    RunSpec spec;
    UniqueFd none;
    if (StepResult r = ReadRunSpec(fd, spec, none)) return r;
    cell = CellOf(spec);
    whole = std::move(spec);
    return StepOk();
  }
  // why: a descriptor both inherited and sent would leave two candidates for the run;
  // checked now, before anything of the worker's own can land on 6 or 7.
  if (RunSlotsInherited()) return Fail(EEXIST);
  unsigned char prefix[kCellSpecPrefixBytes];
  if (StepResult r = ReceiveExactly(fd, reinterpret_cast<char*>(prefix), sizeof prefix)) return r;
  uint32_t len = 0;
  for (size_t i = 0; i < sizeof prefix; ++i) len |= uint32_t{prefix[i]} << (8 * i);
  // Bounded before anything is allocated.
  if (len > kCellSpecMaxBytes) return Fail(EMSGSIZE);
  std::string payload(len, '\0');
  if (StepResult r = ReceiveExactly(fd, payload.data(), payload.size())) return r;
  std::optional<CellSpec> decoded = DecodeCellSpec(payload);
  if (!decoded) return Fail(EINVAL);
  cell = *decoded;
  return StepOk();
}

StepResult ReadRunSpecAfterCell(int fd, const CellSpec& cell, RunSpec& out,
                                UniqueFd& egress_channel) {
  RunSpec spec;
  if (StepResult r = ReadRunSpec(fd, spec, egress_channel)) return r;
  // why: the cell's steps were taken for `cell`; a description asking for another uid
  // (or none), or a probe, would run with what it did not ask for.
  if (!CellMatches(cell, spec)) return Fail(EINVAL);
  out = std::move(spec);
  return StepOk();
}

StepResult ReadRunSpec(int fd, RunSpec& out, UniqueFd& egress_channel) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Fail(errno);
  const bool socket = S_ISSOCK(st.st_mode);
  // why: a descriptor both inherited and sent would leave two candidates for the run.
  const bool inherited = socket && RunSlotsInherited();
  std::string bytes;
  char buf[16384];
  Received got;
  for (;;) {
    int err = 0;
    const ssize_t n = socket ? ReceiveSome(fd, buf, sizeof buf, got, err)
                             : read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (!socket) err = errno;
      if (err == EINTR) continue;
      got.CloseAll();
      return Fail(err);
    }
    if (n == 0) break;  // EOF terminates the spec: the broker closed its end
    // Bounded: a broker bug or a hostile writer cannot make the worker grow without end.
    if (bytes.size() + static_cast<size_t>(n) > kRunSpecMaxBytes) {
      got.CloseAll();
      return Fail(EMSGSIZE);
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
  if (got.count != 0 && inherited) {
    got.CloseAll();
    return Fail(EEXIST);
  }
  std::optional<RunSpec> spec = DecodeRunSpec(bytes);
  // why: the channel comes exactly with a run in the declared network mode: without it
  // the mirror could answer names it has no way to connect, with it a run in another mode
  // would hold a way to its broker it has no use for.
  const bool declared = spec && spec->egress_declared && !spec->probe;
  if (got.count == 3 && !declared) {
    got.CloseAll();
    return Fail(EBADMSG);
  }
  if (declared && got.count != 3) {
    got.CloseAll();
    return Fail(EBADMSG);
  }
  if (got.count == 3) {
    // Lifted above the layout, close-on-exec: the mirror's alone (worker/egress_relay.h).
    egress_channel.reset(fcntl(got.fds[2], F_DUPFD_CLOEXEC, kLiftFloor));
    close(got.fds[2]);
    got.count = 2;
    if (!egress_channel.valid()) {
      got.CloseAll();
      return Fail(errno);
    }
  }
  if (got.count != 0)
    if (auto e = PlaceReceived(got.fds)) return e;
  if (!spec) return Fail(EINVAL);
  out = std::move(*spec);
  return StepOk();
}

}  // namespace skillmcp::worker
