// The sink against real descriptors: a datagram socket standing where the journal's is,
// and a pipe nobody reads for stderr. Nothing here may block: a test that hangs fails.
#include "broker/audit/audit_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

namespace skillmcp {
namespace {

AuditFacts Facts(const std::string& skill) {
  AuditFacts f;
  f.outcome = AuditOutcome::kRan;
  f.skill = skill;
  f.script = "run.js";
  f.prepared = true;
  f.argv = {"run.js", std::string(150, 'a')};
  f.exit_code = 0;
  return f;
}

struct Journal {
  std::string dir, path;
  UniqueFd fd;
  Journal() {
    char tmpl[] = "/tmp/audit-sink-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/socket";
    fd.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    strcpy(a.sun_path, path.c_str());
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  ~Journal() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
  std::string Receive() {
    std::string buf(1 << 20, '\0');
    ssize_t n = recv(fd.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) return "";
    buf.resize(static_cast<size_t>(n));
    return buf;
  }
};

// Where stderr would be: a pipe whose reader the test controls.
struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
    r.reset(p[0]);
    w.reset(p[1]);
  }
};

std::string Lost(const std::string& datagram) {
  const std::string key = "\nSKILL_MCP_AUDIT_LOST=";
  size_t at = datagram.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return datagram.substr(at, datagram.find('\n', at) - at);
}

TEST(AuditSink, WritesTheNativeProtocolToTheJournalSocket) {
  Journal journal;
  EventLoop loop;
  AuditSink sink(loop);
  std::string why;
  ASSERT_TRUE(sink.Open(AuditTarget::kAuto, &why, journal.path)) << why;
  EXPECT_TRUE(sink.to_journal());
  sink.Emit(Facts("pdf"));
  EXPECT_EQ(journal.Receive(), JournalDatagram(BuildAuditFields(Facts("pdf"))));
  EXPECT_EQ(sink.written(), 1u);
  EXPECT_EQ(sink.lost(), 0u);
}

TEST(AuditSink, DemandedJournalWithoutItsSocketStopsTheBoot) {
  EventLoop loop;
  AuditSink sink(loop);
  std::string why;
  EXPECT_FALSE(sink.Open(AuditTarget::kJournal, &why, "/nonexistent/journal/socket"));
  EXPECT_NE(why.find("SKILL_MCP_AUDIT=journal"), std::string::npos) << why;
}

TEST(AuditSink, AutoWithoutAJournalWritesMarkedLinesToStderr) {
  Pipe pipe;
  const int r = pipe.r.get();
  EventLoop loop;
  AuditSink sink(loop);
  std::string why;
  ASSERT_TRUE(sink.Open(AuditTarget::kAuto, &why, "/nonexistent/journal/socket", pipe.w.get()))
      << why;
  EXPECT_FALSE(sink.to_journal());
  sink.Emit(Facts("pdf"));
  char buf[8192];
  ssize_t n = read(r, buf, sizeof buf);
  ASSERT_GT(n, 0);
  const std::string line(buf, static_cast<size_t>(n));
  EXPECT_EQ(line, AuditJsonLine(BuildAuditFields(Facts("pdf"))));
  EXPECT_EQ(line.rfind(kAuditJsonMark, 0), 0u);
}

// A reader of stderr that stops reading: Emit returns at once every time, what does not
// fit the bound is counted, and the count reaches the records written after it.
TEST(AuditSink, ASlowStderrReaderNeverBlocksAndLossesAreCounted) {
  Pipe pipe;
  const int r = pipe.r.get();
  EventLoop loop;
  AuditSink sink(loop);
  std::string why;
  ASSERT_TRUE(sink.Open(AuditTarget::kStderr, &why, kJournalSocketPath, pipe.w.get())) << why;
  const int total = 5000;  // about 2 MiB of records: the pipe and the queue together hold less
  for (int i = 0; i < total; ++i) sink.Emit(Facts("s" + std::to_string(i)));
  EXPECT_GT(sink.lost(), 0u);
  EXPECT_LE(sink.queued_bytes(), kAuditQueueBytes);
  const uint64_t lost = sink.lost();

  // The reader comes back: everything queued reaches it, in order, whole lines.
  std::string got;
  char buf[65536];
  for (int round = 0; round < 10000 && (sink.queued_bytes() > 0 || got.empty()); ++round) {
    ssize_t n = read(r, buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    loop.RunOnce(0);
  }
  ASSERT_EQ(sink.queued_bytes(), 0u);
  for (ssize_t n; (n = read(r, buf, sizeof buf)) > 0;) {
    got.append(buf, static_cast<size_t>(n));
    if (n < static_cast<ssize_t>(sizeof buf)) break;
  }
  size_t lines = 0;
  for (size_t at = 0; (at = got.find('\n', at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines + lost, static_cast<size_t>(total));
  EXPECT_EQ(sink.written(), lines);

  // The next record says how many were lost before it.
  sink.Emit(Facts("after"));
  ssize_t n = read(r, buf, sizeof buf);
  ASSERT_GT(n, 0);
  const nlohmann::json j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)));
  EXPECT_EQ(j["SKILL_MCP_AUDIT_LOST"], std::to_string(lost));
}

// A journal that takes nothing (its queue full): sends would wait, so records queue, then
// are counted lost; nothing blocks.
TEST(AuditSink, AFullJournalNeverBlocks) {
  Journal journal;
  EventLoop loop;
  AuditSink sink(loop);
  std::string why;
  ASSERT_TRUE(sink.Open(AuditTarget::kJournal, &why, journal.path)) << why;
  const int total = 3000;
  for (int i = 0; i < total; ++i) sink.Emit(Facts("s" + std::to_string(i)));
  EXPECT_GT(sink.lost(), 0u);
  EXPECT_GT(sink.queued_bytes(), 0u);
  // The journal reads again: the queue drains from the loop.
  size_t received = 0;
  for (int round = 0; round < 100000 && sink.queued_bytes() > 0; ++round) {
    while (!journal.Receive().empty()) ++received;
    loop.RunOnce(0);
  }
  while (!journal.Receive().empty()) ++received;
  EXPECT_EQ(sink.queued_bytes(), 0u);
  EXPECT_EQ(received + sink.lost(), static_cast<size_t>(total));
  sink.Emit(Facts("after"));
  EXPECT_EQ(Lost(journal.Receive()), std::to_string(sink.lost()));
}

TEST(AuditSink, AClosedStderrCountsEveryRecordLost) {
  signal(SIGPIPE, SIG_IGN);  // as the broker has it (HardenProcess)
  Pipe pipe;
  pipe.r.reset();
  EventLoop loop;
  AuditSink sink(loop);
  std::string why;
  ASSERT_TRUE(sink.Open(AuditTarget::kStderr, &why, kJournalSocketPath, pipe.w.get())) << why;
  sink.Emit(Facts("a"));
  sink.Emit(Facts("b"));
  EXPECT_EQ(sink.lost(), 2u);
  EXPECT_EQ(sink.written(), 0u);
}

TEST(AuditSink, ParsesItsSetting) {
  EXPECT_EQ(ParseAuditTarget(""), AuditTarget::kAuto);
  EXPECT_EQ(ParseAuditTarget("auto"), AuditTarget::kAuto);
  EXPECT_EQ(ParseAuditTarget("journal"), AuditTarget::kJournal);
  EXPECT_EQ(ParseAuditTarget("stderr"), AuditTarget::kStderr);
  EXPECT_EQ(ParseAuditTarget("syslog"), std::nullopt);
}

}  // namespace
}  // namespace skillmcp
