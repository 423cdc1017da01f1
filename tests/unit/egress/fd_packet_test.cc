#include "shared/fd_packet.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace skillmcp {
namespace {

struct Pair {
  UniqueFd a, b;
};

Pair SeqpacketPair() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

// Sends `bytes` with every descriptor in `fds` in one SCM_RIGHTS part.
void SendWithFds(int sock, std::string_view bytes, const std::vector<int>& fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  ASSERT_EQ(sendmsg(sock, &msg, 0), static_cast<ssize_t>(bytes.size()));
}

TEST(FdPacketTest, AMessageWithOneDescriptorArrivesWhole) {
  Pair p = SeqpacketPair();
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  UniqueFd r(pipefd[0]), w(pipefd[1]);
  ASSERT_EQ(SendFdPacket(p.a.get(), "hello", w.get()), 0);
  ASSERT_EQ(SendFdPacket(p.a.get(), "again", -1), 0);
  char buf[16];
  FdPacket got = ReceiveFdPacket(p.b.get(), buf, sizeof buf);
  ASSERT_EQ(got.status, FdPacket::Status::kMessage);
  EXPECT_EQ(std::string_view(buf, got.size), "hello");
  ASSERT_TRUE(got.fd.valid());
  EXPECT_EQ(fcntl(got.fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  ASSERT_EQ(write(got.fd.get(), "x", 1), 1) << "the write end of the same pipe";
  char c = 0;
  EXPECT_EQ(read(r.get(), &c, 1), 1);

  got = ReceiveFdPacket(p.b.get(), buf, sizeof buf);
  ASSERT_EQ(got.status, FdPacket::Status::kMessage);
  EXPECT_EQ(std::string_view(buf, got.size), "again");
  EXPECT_FALSE(got.fd.valid());

  EXPECT_EQ(ReceiveFdPacket(p.b.get(), buf, sizeof buf).status, FdPacket::Status::kWouldBlock);
  p.a.reset();
  EXPECT_EQ(ReceiveFdPacket(p.b.get(), buf, sizeof buf).status, FdPacket::Status::kClosed);
}

TEST(FdPacketTest, TwoDescriptorsAreRefusedAndBothClosed) {
  Pair p = SeqpacketPair();
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC | O_NONBLOCK), 0);
  UniqueFd r(pipefd[0]);
  {
    UniqueFd w(pipefd[1]), w2(dup(pipefd[1]));
    SendWithFds(p.a.get(), "two", {w.get(), w2.get()});
  }
  char c = 0;
  EXPECT_EQ(read(r.get(), &c, 1), -1) << "the write ends are in flight, not closed yet";
  char buf[16];
  FdPacket got = ReceiveFdPacket(p.b.get(), buf, sizeof buf);
  EXPECT_EQ(got.status, FdPacket::Status::kRefused);
  EXPECT_FALSE(got.fd.valid());
  EXPECT_EQ(std::string_view(buf, got.size), "two") << "the bytes stay readable for a header";
  EXPECT_EQ(read(r.get(), &c, 1), 0) << "every write end that came is closed";
}

TEST(FdPacketTest, AMessageLongerThanTheBufferIsRefused) {
  Pair p = SeqpacketPair();
  ASSERT_EQ(SendFdPacket(p.a.get(), std::string(64, 'x'), -1), 0);
  char buf[16];
  FdPacket got = ReceiveFdPacket(p.b.get(), buf, sizeof buf);
  EXPECT_EQ(got.status, FdPacket::Status::kRefused);
  EXPECT_EQ(got.size, sizeof buf);
  EXPECT_EQ(ReceiveFdPacket(p.b.get(), buf, sizeof buf).status, FdPacket::Status::kWouldBlock)
      << "the rest of it is gone with it, not read as a second message";
}

TEST(FdPacketTest, SendingToAFullQueueSaysSoAndToAClosedPeerNeverRaisesSigpipe) {
  Pair p = SeqpacketPair();
  int err = 0;
  for (int i = 0; i < 100000 && err == 0; ++i) err = SendFdPacket(p.a.get(), "fill", -1);
  EXPECT_EQ(err, EAGAIN);
  p.b.reset();
  // Unread messages were dropped with the peer: ECONNRESET rather than EPIPE, and no
  // SIGPIPE either way (the test process is still here).
  err = SendFdPacket(p.a.get(), "gone", -1);
  EXPECT_TRUE(err == EPIPE || err == ECONNRESET) << err;
}

}  // namespace
}  // namespace skillmcp
