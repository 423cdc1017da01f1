// The session over stdio it does not control: a client that stops reading, input from a
// regular file or /dev/null (epoll refuses both), output to a file, a closed stdout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "broker/mcp/output_queue.h"
#include "broker/mcp/session.h"
#include "broker/loop/stdio_fd.h"

namespace skillmcp {
namespace {

std::string Ping(int id, size_t pad = 0) {
  return "{\"jsonrpc\":\"2.0\",\"id\":\"" + std::string(pad, 'p') + std::to_string(id) +
         "\",\"method\":\"ping\"}\n";
}

void Register(Session& s) {
  s.OnRequest("ping", [](const RpcMessage&, Reply r) { r.Result(OrderedJson::object()); });
}

std::string TempFile(const std::string& content) {
  char path[] = "/tmp/skill-mcp-stdio-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);
  return path;
}

size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string ReadAll(int fd) {
  std::string all;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
  return all;
}

// A client that sends many requests and reads none of the answers: the loop keeps firing
// timers, the session stops reading once the queue passes its cap, and every answer
// arrives, once and in order, when the client reads again.
TEST(StdioTest, ClientThatStopsReadingNeitherBlocksTheLoopNorGrowsTheQueue) {
  int in[2], out[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC | O_NONBLOCK), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);  // blocking, as a client's pipe usually is
  fcntl(out[1], F_SETPIPE_SZ, 4096);
  EventLoop loop;
  Session session(loop, in[0], out[1]);
  Register(session);
  bool closed = false;
  session.OnClosed([&] { closed = true; });
  ASSERT_TRUE(session.Start());

  // 200-byte ids: about 240 bytes an answer, so 40,000 pings would queue ~9.6 MB.
  const int kPings = 40000;
  int sent = 0;
  int timers_fired = 0;
  std::string backlog;
  for (int round = 0; round < 2000 && sent < kPings; ++round) {
    while (sent < kPings && backlog.size() < 65536) backlog += Ping(sent++, 200);
    ssize_t w = write(in[1], backlog.data(), backlog.size());
    if (w > 0) backlog.erase(0, static_cast<size_t>(w));
    loop.AddTimer(0, [&] { ++timers_fired; });
    loop.RunOnce(1);
    ASSERT_LE(session.queued_output_bytes(), kOutputPauseBytes + 65536);
    if (session.reading_paused()) break;
  }
  EXPECT_TRUE(session.reading_paused()) << "reading stops past the cap";
  EXPECT_GT(timers_fired, 0);
  // Paused, the loop still runs timers and reads nothing more.
  size_t queued = session.queued_output_bytes();
  for (int i = 0; i < 50; ++i) {
    loop.AddTimer(0, [&] { ++timers_fired; });
    loop.RunOnce(1);
  }
  EXPECT_EQ(session.queued_output_bytes(), queued);
  EXPECT_FALSE(closed);

  // The client reads again: everything it sent is answered exactly once, in order.
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  std::string got;
  size_t lines = 0;
  for (int round = 0; round < 200000 && lines < static_cast<size_t>(kPings); ++round) {
    if (!backlog.empty() || sent < kPings) {
      while (sent < kPings && backlog.size() < 65536) backlog += Ping(sent++, 200);
      ssize_t w = write(in[1], backlog.data(), backlog.size());
      if (w > 0) backlog.erase(0, static_cast<size_t>(w));
    }
    std::string more = ReadAll(out[0]);
    lines += CountLines(more);
    got += more;
    loop.RunOnce(1);
  }
  got += ReadAll(out[0]);
  ASSERT_EQ(CountLines(got), static_cast<size_t>(kPings));
  size_t start = 0;
  for (int i = 0; i < kPings; i += 997) {
    size_t at = got.find("\"id\":\"" + std::string(200, 'p') + std::to_string(i) + "\"", start);
    ASSERT_NE(at, std::string::npos) << "answer " << i;
    start = at;
  }
  EXPECT_FALSE(session.reading_paused());
  for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
}

TEST(StdioTest, RegularFileInputIsReadToItsEnd) {
  std::string path =
      TempFile(Ping(1) + Ping(2) + "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
  int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC | O_NONBLOCK), 0);
  EventLoop loop;
  Session session(loop, in, out[1]);
  Register(session);
  session.OnClosed([&] { loop.Stop(); });
  ASSERT_TRUE(session.Start()) << "epoll refuses a regular file; it is read another way";
  for (int i = 0; i < 100 && !loop.stopped(); ++i) loop.RunOnce(100);
  EXPECT_TRUE(loop.stopped()) << "the end of the file closes the session";
  EXPECT_EQ(CountLines(ReadAll(out[0])), 3u);
  close(in);
  close(out[0]);
  close(out[1]);
  unlink(path.c_str());
}

TEST(StdioTest, DevNullInputEndsTheSessionAtOnce) {
  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  EventLoop loop;
  Session session(loop, in, out);
  Register(session);
  session.OnClosed([&] { loop.Stop(); });
  ASSERT_TRUE(session.Start());
  for (int i = 0; i < 10 && !loop.stopped(); ++i) loop.RunOnce(100);
  EXPECT_TRUE(loop.stopped());
  close(in);
  close(out);
}

TEST(StdioTest, RegularFileOutputGetsEveryAnswer) {
  std::string in_path = TempFile(Ping(1) + Ping(2));
  std::string out_path = TempFile("");
  int in = open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  int out = open(out_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  EventLoop loop;
  {
    Session session(loop, in, out);
    Register(session);
    session.OnClosed([&] { loop.Stop(); });
    ASSERT_TRUE(session.Start());
    for (int i = 0; i < 100 && !loop.stopped(); ++i) loop.RunOnce(100);
    session.DrainOutput(1000);
  }
  close(in);
  close(out);
  int back = open(out_path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(CountLines(ReadAll(back)), 2u);
  close(back);
  unlink(in_path.c_str());
  unlink(out_path.c_str());
}

TEST(StdioTest, ClosedStdoutClosesTheSession) {
  int in[2], out[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  EventLoop loop;
  Session session(loop, in[0], out[1]);
  Register(session);
  bool closed = false;
  session.OnClosed([&] { closed = true; });
  ASSERT_TRUE(session.Start());
  close(out[0]);
  for (int i = 0; i < 10 && !closed; ++i) loop.RunOnce(100);
  EXPECT_TRUE(closed) << "a client that closed stdout is gone";
  for (int fd : {in[0], in[1], out[1]}) close(fd);
}

// The shared description is left as the client made it: a private one carries O_NONBLOCK.
TEST(StdioTest, StdoutPipeFlagsAreLeftAlone) {
  int in[2], out[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  EventLoop loop;
  {
    Session session(loop, in[0], out[1]);
    ASSERT_TRUE(session.Start());
    struct stat st {};
    if (stat("/proc/self/fd", &st) != 0)
      GTEST_SKIP() << "SKIP: no /proc; the fallback changes the flags";
    EXPECT_EQ(fcntl(out[1], F_GETFL) & O_NONBLOCK, 0);
    EXPECT_EQ(fcntl(in[0], F_GETFL) & O_NONBLOCK, 0);
  }
  for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
}

// systemd Accept=yes: stdin and stdout are one connected socket. A client that stops
// reading pauses the session without the socket's shared flags ever changing.
TEST(StdioTest, OneSocketForBothWaysNeverBlocksAndKeepsItsFlags) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  int out = dup(sv[0]);  // as systemd passes it: fds 0 and 1, one description
  EventLoop loop;
  Session session(loop, sv[0], out);
  Register(session);
  ASSERT_TRUE(session.Start());
  fcntl(sv[1], F_SETFL, O_NONBLOCK);  // the test's end only
  std::string backlog;
  int sent = 0;
  for (int round = 0; round < 5000 && !session.reading_paused(); ++round) {
    while (backlog.size() < 65536) backlog += Ping(sent++, 200);
    ssize_t w = write(sv[1], backlog.data(), backlog.size());
    if (w > 0) backlog.erase(0, static_cast<size_t>(w));
    loop.RunOnce(1);
  }
  EXPECT_TRUE(session.reading_paused());
  EXPECT_EQ(fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0) << "MSG_DONTWAIT, not O_NONBLOCK";
  close(out);
  close(sv[0]);
  close(sv[1]);
}

// A pty master (a terminal emulator's end) is a cloning device: a reopen through /proc
// would give a new, unconnected pty. Output must reach the pty the client holds.
TEST(StdioTest, APtyMasterIsNeverReopened) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) GTEST_SKIP() << "SKIP: no pty available: " << strerror(errno);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(slave, 0);
  {
    StdioFd out;
    out.Open(master, /*for_write=*/true);
    EXPECT_EQ(out.fd(), master);  // not a copy of its own
    char msg[] = "answer\n";
    iovec iov{msg, sizeof msg - 1};
    ASSERT_EQ(out.Write(&iov, 1), static_cast<ssize_t>(sizeof msg - 1));
    char buf[32] = {};
    ASSERT_GT(read(slave, buf, sizeof buf), 0);  // it reached the client's pty
    EXPECT_EQ(std::string(buf).substr(0, 6), "answer");
  }
  close(slave);
  close(master);
}

// At exit a client that takes a byte now and then must not keep the broker alive: the
// drain has a deadline in all, not only per stall.
TEST(StdioTest, TheExitDrainEndsWhileAClientTricklesBytes) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  EventLoop loop;
  std::atomic<bool> stop{false};
  std::thread reader([&] {  // one byte every 20 ms: always some progress
    char c;
    while (!stop.load()) {
      if (read(out[0], &c, 1) <= 0) break;
      usleep(20000);
    }
  });
  {
    OutputQueue queue(loop, out[1]);
    ASSERT_TRUE(queue.Start({}));
    queue.Push(std::string(1 << 20, 'x') + "\n");  // far more than the pipe holds
    queue.DrainBlocking(/*stall_ms=*/1000, /*total_ms=*/300);
    EXPECT_GT(queue.queued_bytes(), 0u);  // it gave up with output left, it did not hang
  }
  stop = true;
  close(out[1]);
  reader.join();
  close(out[0]);
}

}  // namespace
}  // namespace skillmcp
