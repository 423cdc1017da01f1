// Where audit records go (docs/audit.md): the journal, through its native protocol on a
// non-blocking datagram socket, or stderr as marked JSON lines through a bounded queue.
// Why never a blocking write: a full journal or a slow reader of stderr must not stop the
// event loop (runs, timeouts, the client's answers); a record that cannot be written now
// waits in a bounded queue, and one that finds the queue full, or a write that fails, is
// counted as lost. The count goes into every later record (SKILL_MCP_AUDIT_LOST) and into
// the broker's last line on stderr.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "broker/audit/audit_record.h"
#include "broker/loop/byte_queue.h"
#include "broker/loop/event_loop.h"
#include "broker/loop/stdio_fd.h"
#include "shared/unique_fd.h"

namespace skillmcp {

// SKILL_MCP_AUDIT: auto (the journal when its socket takes a connection, else stderr),
// journal (the boot fails without it), stderr.
enum class AuditTarget { kAuto, kJournal, kStderr };
// nullopt for a value that is none of them ("" is auto).
std::optional<AuditTarget> ParseAuditTarget(std::string_view value);

inline constexpr std::string_view kJournalSocketPath = "/run/systemd/journal/socket";
// Records waiting for a slow journal or reader of stderr, at most: about 500 records.
inline constexpr size_t kAuditQueueBytes = 512 * 1024;
// At exit, queued records get this long without progress, and kAuditExitTotalMs in all.
inline constexpr int kAuditExitStallMs = 1000;
inline constexpr int64_t kAuditExitTotalMs = 3000;

class AuditSink {
 public:
  explicit AuditSink(EventLoop& loop);
  ~AuditSink();
  AuditSink(const AuditSink&) = delete;
  AuditSink& operator=(const AuditSink&) = delete;

  // Chooses and opens where records go. False with `*why` when the journal is demanded
  // and its socket at `journal_path` takes no connection, or stderr cannot be watched.
  bool Open(AuditTarget target, std::string* why,
            std::string_view journal_path = kJournalSocketPath, int stderr_fd = 2);
  bool to_journal() const { return journal_.valid(); }

  // Fills `facts.lost_before`, builds the record and writes it, or queues it.
  void Emit(AuditFacts facts);

  uint64_t lost() const { return lost_; }
  uint64_t written() const { return written_; }
  size_t queued_bytes() const { return journal_queued_ + lines_.bytes(); }

  // At exit: writes what is queued, waiting kAuditExitStallMs at most each time nothing
  // moves and kAuditExitTotalMs in all; what is left counts as lost.
  void DrainAtExit();

 private:
  enum class Step { kProgress, kWouldBlock, kFailed };
  Step SendJournal(const std::string& datagram);
  void Flush();
  void FlushJournal();
  void FlushStderr();
  void Break();  // stderr's reader is gone
  void Watch(bool want);
  void Lose(uint64_t n) { lost_ += n; }

  EventLoop& loop_;
  UniqueFd journal_;  // connected, non-blocking AF_UNIX datagram socket
  std::string journal_path_;
  StdioFd err_;
  bool err_open_ = false;
  bool broken_ = false;                // stderr's reader is gone: every record from now on is lost
  bool registered_ = false;            // the descriptor is on the loop
  bool watching_ = false;              // EPOLLOUT asked for
  std::deque<std::string> datagrams_;  // for the journal, one record each
  size_t journal_queued_ = 0;          // their bytes
  ByteQueue lines_;                    // for stderr, one record each
  uint64_t lost_ = 0;
  uint64_t written_ = 0;
};

}  // namespace skillmcp
