#include "broker/audit/audit_sink.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace skillmcp {
namespace {

UniqueFd ConnectJournal(std::string_view path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return UniqueFd();
  }
  UniqueFd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return fd;
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

}  // namespace

std::optional<AuditTarget> ParseAuditTarget(std::string_view value) {
  if (value.empty() || value == "auto") return AuditTarget::kAuto;
  if (value == "journal") return AuditTarget::kJournal;
  if (value == "stderr") return AuditTarget::kStderr;
  return std::nullopt;
}

AuditSink::AuditSink(EventLoop& loop) : loop_(loop) {}

AuditSink::~AuditSink() {
  if (registered_) loop_.RemoveFd(journal_.valid() ? journal_.get() : err_.fd());
}

bool AuditSink::Open(AuditTarget target, std::string* why, std::string_view journal_path,
                     int stderr_fd) {
  journal_path_ = std::string(journal_path);
  if (target != AuditTarget::kStderr) {
    journal_ = ConnectJournal(journal_path);
    if (!journal_.valid() && target == AuditTarget::kJournal) {
      *why = "SKILL_MCP_AUDIT=journal, but the journal's socket " + journal_path_ +
             " takes no connection: " + std::strerror(errno);
      return false;
    }
  }
  int fd = journal_.get();
  if (!journal_.valid()) {
    err_.Open(stderr_fd, /*for_write=*/true);
    err_open_ = true;
    if (err_.kind() == StdioFd::Kind::kPlain) return true;  // a file: writes never wait
    fd = err_.fd();
  }
  // Registered with no events, so a descriptor epoll refuses is known at once.
  if (loop_.AddFd(fd, 0, [this](uint32_t ev) {
        // why: a reader of stderr that closed its end is gone; waiting on it would spin.
        if (!journal_.valid() && (ev & (EPOLLERR | EPOLLHUP)) != 0) return Break();
        Flush();
      })) {
    registered_ = true;
    return true;
  }
  if (err_open_ && errno == EPERM) {
    err_.MarkNotPollable();
    return true;
  }
  *why = std::string("cannot watch where audit records go: ") + std::strerror(errno);
  return false;
}

void AuditSink::Emit(AuditFacts facts) {
  facts.lost_before = lost_;
  const AuditFields fields = BuildAuditFields(facts);
  std::string bytes = journal_.valid() ? JournalDatagram(fields) : AuditJsonLine(fields);
  // why a bound: a reader that never reads must not make the broker hold every record.
  if (broken_ || queued_bytes() + bytes.size() > kAuditQueueBytes) return Lose(1);
  if (journal_.valid()) {
    journal_queued_ += bytes.size();
    datagrams_.push_back(std::move(bytes));
  } else {
    lines_.Push(std::move(bytes));
  }
  if (!watching_) Flush();
}

// One record, one datagram. A record holds at most 64 arguments of 200 shown characters
// (about 160 KiB at worst), under the 208 KiB a datagram carries with the default send
// buffer; one the kernel still refuses (EMSGSIZE) is counted lost like any failed write.
AuditSink::Step AuditSink::SendJournal(const std::string& datagram) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (send(journal_.get(), datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
      return Step::kProgress;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::kWouldBlock;
    // why once more: journald restarted binds a new socket at the same path.
    if (errno != ECONNREFUSED && errno != ENOTCONN) return Step::kFailed;
    UniqueFd again = ConnectJournal(journal_path_);
    if (!again.valid()) return Step::kFailed;
    if (registered_) loop_.RemoveFd(journal_.get());
    registered_ = false;
    watching_ = false;
    journal_ = std::move(again);
    registered_ = loop_.AddFd(journal_.get(), 0, [this](uint32_t) { Flush(); });
  }
  return Step::kFailed;
}

void AuditSink::FlushJournal() {
  while (!datagrams_.empty()) {
    Step s = SendJournal(datagrams_.front());
    if (s == Step::kWouldBlock) return;
    journal_queued_ -= datagrams_.front().size();
    datagrams_.pop_front();
    if (s == Step::kFailed) {
      Lose(1);
    } else {
      ++written_;
    }
  }
}

void AuditSink::FlushStderr() {
  while (!lines_.empty() && !broken_) {
    size_t finished = 0;
    ByteQueue::Step s = lines_.WriteSome(err_, &finished);
    written_ += finished;
    if (s == ByteQueue::Step::kWouldBlock) return;
    // why: stderr that fails a write other than "full" is gone for good (EPIPE).
    if (s == ByteQueue::Step::kBroken) Break();
  }
}

void AuditSink::Flush() {
  if (journal_.valid()) {
    FlushJournal();
  } else {
    FlushStderr();
  }
  Watch(queued_bytes() > 0 && !broken_);
}

void AuditSink::Break() {
  broken_ = true;
  Lose(lines_.size());
  lines_.Clear();
  Watch(false);
}

void AuditSink::Watch(bool want) {
  if (want == watching_ || !registered_) return;
  watching_ = want;
  loop_.ModifyFd(journal_.valid() ? journal_.get() : err_.fd(), want ? uint32_t{EPOLLOUT} : 0u);
}

void AuditSink::DrainAtExit() {
  const int64_t deadline = EventLoop::NowMs() + kAuditExitTotalMs;
  while (queued_bytes() > 0 && !broken_) {
    const size_t before = queued_bytes();
    Flush();
    if (queued_bytes() == 0 || broken_) break;
    if (queued_bytes() != before) continue;
    const int64_t left = deadline - EventLoop::NowMs();
    pollfd p{journal_.valid() ? journal_.get() : err_.fd(), POLLOUT, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(std::min<int64_t>(kAuditExitStallMs, left))) <= 0)
      break;
  }
  Lose(datagrams_.size() + lines_.size());
  datagrams_.clear();
  journal_queued_ = 0;
  lines_.Clear();
  Watch(false);
}

}  // namespace skillmcp
