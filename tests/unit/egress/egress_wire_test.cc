#include "shared/egress_wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "tests/unit/fuzz_corpus.h"

namespace skillmcp {
namespace {

std::string Request(const EgressRequest& r) {
  std::optional<std::string> bytes = EncodeEgressRequest(r);
  EXPECT_TRUE(bytes.has_value()) << r.host;
  return bytes.value_or("");
}

// A request's bytes written by hand, so that each field can be made wrong on its own.
std::string RawRequest(std::string_view magic, uint32_t version, uint32_t id, uint16_t port,
                       uint8_t flags, uint16_t host_len, std::string_view host) {
  std::string out(magic);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(version >> (8 * i)));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(id >> (8 * i)));
  out.push_back(static_cast<char>(port & 0xff));
  out.push_back(static_cast<char>(port >> 8));
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>(host_len & 0xff));
  out.push_back(static_cast<char>(host_len >> 8));
  out.append(host);
  return out;
}

EgressAnswer V4Answer(uint32_t id, int32_t error, const char* address, uint16_t port) {
  EgressAnswer a;
  a.id = id;
  a.error = error;
  a.family = AF_INET;
  inet_pton(AF_INET, address, a.address.data());
  a.port = port;
  return a;
}

std::string Answer(const EgressAnswer& a) {
  char out[kEgressAnswerBytes];
  EXPECT_TRUE(EncodeEgressAnswer(a, out));
  return std::string(out, sizeof out);
}

TEST(EgressWireTest, RequestsRoundTrip) {
  for (const EgressRequest& r : {EgressRequest{7, "api.example.com", 443, false},
                                 EgressRequest{0xffffffff, "10.0.0.1", 65535, true},
                                 EgressRequest{1, "2001:db8::1", 1, false},
                                 EgressRequest{2, std::string(63, 'a') + ".b", 80, true}}) {
    const std::string bytes = Request(r);
    EXPECT_EQ(DecodeEgressRequest(bytes), r) << r.host;
    EXPECT_EQ(PeekEgressRequestId(bytes), r.id);
  }
}

TEST(EgressWireTest, TheLayoutIsLittleEndianAsDocumented) {
  const std::string bytes = Request({0x01020304, "a.b", 0x0506, true});
  EXPECT_EQ(bytes, RawRequest("SMEQ", 1, 0x01020304, 0x0506, 1, 3, "a.b"));
  const std::string answer = Answer(V4Answer(0x0a0b0c0d, 0, "1.2.3.4", 0x0102));
  ASSERT_EQ(answer.size(), kEgressAnswerBytes);
  EXPECT_EQ(answer.substr(0, 4), "SMEA");
  EXPECT_EQ(answer.substr(8, 4), std::string("\x0d\x0c\x0b\x0a", 4));
  EXPECT_EQ(static_cast<uint8_t>(answer[16]), AF_INET);
  EXPECT_EQ(answer.substr(17, 4), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(answer.substr(33), std::string("\x02\x01", 2));
}

TEST(EgressWireTest, RequestsForHostsTheAllowlistCouldNotHoldAreNotEncoded) {
  for (const char* host : {"", "*.example.com", "API.example.com", "example.com.", "a..b",
                           "fe80::1%eth0", "127.1", "a_b.com", "2001:DB8::1"}) {
    EXPECT_FALSE(EncodeEgressRequest({1, host, 443, false}).has_value()) << host;
  }
  EXPECT_FALSE(EncodeEgressRequest({1, "example.com", 0, false}).has_value());
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  EXPECT_FALSE(EncodeEgressRequest({1, long_name + "com", 443, false}).has_value());
}

TEST(EgressWireTest, EveryMalformedRequestIsRefused) {
  const std::string good = RawRequest("SMEQ", 1, 9, 443, 0, 11, "example.com");
  ASSERT_TRUE(DecodeEgressRequest(good).has_value());
  struct Case {
    const char* why;
    std::string bytes;
  };
  const Case cases[] = {
      {"magic", RawRequest("SMEA", 1, 9, 443, 0, 11, "example.com")},
      {"version", RawRequest("SMEQ", 2, 9, 443, 0, 11, "example.com")},
      {"port 0", RawRequest("SMEQ", 1, 9, 0, 0, 11, "example.com")},
      {"unknown flag", RawRequest("SMEQ", 1, 9, 443, 2, 11, "example.com")},
      {"high flag", RawRequest("SMEQ", 1, 9, 443, 0x81, 11, "example.com")},
      {"length short", RawRequest("SMEQ", 1, 9, 443, 0, 10, "example.com")},
      {"length long", RawRequest("SMEQ", 1, 9, 443, 0, 12, "example.com")},
      {"empty host", RawRequest("SMEQ", 1, 9, 443, 0, 0, "")},
      {"wildcard", RawRequest("SMEQ", 1, 9, 443, 0, 13, "*.example.com")},
      {"upper case", RawRequest("SMEQ", 1, 9, 443, 0, 11, "Example.com")},
      {"trailing dot", RawRequest("SMEQ", 1, 9, 443, 0, 12, "example.com.")},
      {"NUL", RawRequest("SMEQ", 1, 9, 443, 0, 11, std::string_view("example\0com", 11))},
      {"scoped", RawRequest("SMEQ", 1, 9, 443, 0, 10, "fe80::1%lo")},
      {"trailing byte", good + "x"},
      {"oversize", RawRequest("SMEQ", 1, 9, 443, 0, 300, std::string(300, 'a'))},
  };
  for (const Case& c : cases) EXPECT_FALSE(DecodeEgressRequest(c.bytes).has_value()) << c.why;
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(DecodeEgressRequest(good.substr(0, n)).has_value()) << n;
}

TEST(EgressWireTest, ARequestIdIsReadOnlyBehindItsMagicAndVersion) {
  EXPECT_EQ(PeekEgressRequestId(RawRequest("SMEQ", 1, 42, 0, 0xff, 0, "")), 42u);
  EXPECT_FALSE(PeekEgressRequestId(RawRequest("SMEQ", 2, 42, 443, 0, 1, "a")).has_value());
  EXPECT_FALSE(PeekEgressRequestId(RawRequest("XMEQ", 1, 42, 443, 0, 1, "a")).has_value());
  EXPECT_FALSE(PeekEgressRequestId(std::string("SMEQ\x01\0\0\0\x2a", 9)).has_value());
  EXPECT_FALSE(PeekEgressRequestId("").has_value());
}

TEST(EgressWireTest, AnswersRoundTrip) {
  EgressAnswer v6;
  v6.id = 3;
  v6.family = AF_INET6;
  inet_pton(AF_INET6, "2001:db8::7", v6.address.data());
  v6.port = 443;
  EgressAnswer refused_without_peer;
  refused_without_peer.id = 4;
  refused_without_peer.error = ENOENT;
  for (const EgressAnswer& a :
       {V4Answer(1, 0, "192.0.2.1", 443), v6, V4Answer(2, EACCES, "127.0.0.1", 80),
        refused_without_peer, V4Answer(5, 4095, "10.0.0.1", 1)}) {
    EXPECT_EQ(DecodeEgressAnswer(Answer(a)), a) << a.id;
  }
}

TEST(EgressWireTest, AnswersTheDecoderWouldRefuseAreNotEncoded) {
  char out[kEgressAnswerBytes];
  EgressAnswer no_peer;
  no_peer.id = 1;
  EXPECT_FALSE(EncodeEgressAnswer(no_peer, out)) << "success without a peer";
  EXPECT_FALSE(EncodeEgressAnswer(V4Answer(1, -1, "1.2.3.4", 1), out));
  EXPECT_FALSE(EncodeEgressAnswer(V4Answer(1, 4096, "1.2.3.4", 1), out));
  EXPECT_FALSE(EncodeEgressAnswer(V4Answer(1, 0, "1.2.3.4", 0), out)) << "a peer without port";
  EgressAnswer bad_family = V4Answer(1, 0, "1.2.3.4", 1);
  bad_family.family = AF_UNIX;
  EXPECT_FALSE(EncodeEgressAnswer(bad_family, out));
  EgressAnswer wide_v4 = V4Answer(1, 0, "1.2.3.4", 1);
  wide_v4.address[4] = 1;
  EXPECT_FALSE(EncodeEgressAnswer(wide_v4, out)) << "bytes an IPv4 address does not use";
  EgressAnswer port_without_peer;
  port_without_peer.error = EIO;
  port_without_peer.port = 1;
  EXPECT_FALSE(EncodeEgressAnswer(port_without_peer, out));
  EgressAnswer address_without_family;
  address_without_family.error = EIO;
  address_without_family.address[0] = 1;
  EXPECT_FALSE(EncodeEgressAnswer(address_without_family, out));
}

TEST(EgressWireTest, EveryMalformedAnswerIsRefused) {
  const std::string good = Answer(V4Answer(1, 0, "192.0.2.1", 443));
  auto with = [&](size_t at, char value) {
    std::string b = good;
    b[at] = value;
    return b;
  };
  EXPECT_FALSE(DecodeEgressAnswer(with(3, 'Q')).has_value()) << "magic";
  EXPECT_FALSE(DecodeEgressAnswer(with(4, 2)).has_value()) << "version";
  EXPECT_FALSE(DecodeEgressAnswer(with(15, '\x80')).has_value()) << "negative error";
  EXPECT_FALSE(DecodeEgressAnswer(with(13, 0x10)).has_value()) << "error above 4095";
  EXPECT_FALSE(DecodeEgressAnswer(with(16, 0)).has_value()) << "success without a family";
  EXPECT_FALSE(DecodeEgressAnswer(with(16, AF_UNIX)).has_value()) << "family";
  EXPECT_FALSE(DecodeEgressAnswer(with(21, 1)).has_value()) << "IPv4 with a fifth byte";
  std::string port0 = good;
  port0[33] = port0[34] = 0;
  EXPECT_FALSE(DecodeEgressAnswer(port0).has_value()) << "a peer without port";
  EXPECT_FALSE(DecodeEgressAnswer(good + '\0').has_value()) << "trailing byte";
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(DecodeEgressAnswer(good.substr(0, n)).has_value()) << n;
}

// A listening TCP socket on loopback, and a connection to it.
struct LoopbackTcp {
  UniqueFd listener, connected;
  LoopbackTcp() {
    listener.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listener.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        listen(listener.get(), 4) != 0 ||
        getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    connected.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (connect(connected.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) connected.reset();
  }
};

TEST(EgressWireTest, AnAnswerIsTakenOnlyWithASocketExactlyWhenItSucceeded) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd other(sv[1]);
  LoopbackTcp tcp;
  ASSERT_TRUE(tcp.connected.valid());
  UniqueFd sock = std::move(tcp.connected);
  const std::string ok = Answer(V4Answer(1, 0, "192.0.2.1", 443));
  const std::string refused = Answer(V4Answer(1, EACCES, "127.0.0.1", 443));

  ASSERT_TRUE(TakeEgressAnswer(ok, sock).has_value());
  EXPECT_TRUE(sock.valid());

  UniqueFd none;
  EXPECT_FALSE(TakeEgressAnswer(ok, none).has_value()) << "success without a socket";
  EXPECT_TRUE(TakeEgressAnswer(refused, none).has_value());

  const int raw = sock.get();
  EXPECT_FALSE(TakeEgressAnswer(refused, sock).has_value()) << "a refusal with a descriptor";
  EXPECT_FALSE(sock.valid());
  EXPECT_EQ(fcntl(raw, F_GETFD), -1) << "the descriptor that came is closed";

  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  close(p[1]);
  UniqueFd pipe_end(p[0]);
  EXPECT_FALSE(TakeEgressAnswer(ok, pipe_end).has_value()) << "a pipe is not a connection";
  EXPECT_FALSE(pipe_end.valid());

  UniqueFd garbage(dup(other.get()));
  EXPECT_FALSE(TakeEgressAnswer("SMEA", garbage).has_value());
  EXPECT_FALSE(garbage.valid());
}

// What a relay splices is a connected TCP stream: a unix socket, a datagram socket or a
// listener handed back as a success is refused and closed.
TEST(EgressWireTest, OnlyAConnectedTcpStreamIsTakenAsAConnection) {
  const std::string ok = Answer(V4Answer(1, 0, "192.0.2.1", 443));
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd unix_end(sv[0]), unix_other(sv[1]);
  UniqueFd datagram(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  LoopbackTcp tcp;
  ASSERT_TRUE(tcp.connected.valid());
  for (UniqueFd* fd : {&unix_end, &datagram, &tcp.listener}) {
    ASSERT_TRUE(fd->valid());
    EXPECT_FALSE(TakeEgressAnswer(ok, *fd).has_value());
    EXPECT_FALSE(fd->valid());
  }
  EXPECT_TRUE(TakeEgressAnswer(ok, tcp.connected).has_value());  // the control
}

// The egress_wire fuzz target's seeds, replayed with its invariants: exactly the seeds
// named for a request or an answer decode and re-encode to themselves, and the requests
// malformed only past their header still give the helper an id to answer EINVAL with.
TEST(EgressWireTest, TheFuzzCorpusDecodesAsItsNamesSay) {
  const std::map<std::string, std::string> seeds = ReadFuzzCorpus("egress_wire");
  std::set<std::string> requests, peeked, answers;
  for (const auto& [name, bytes] : seeds) {
    if (std::optional<EgressRequest> r = DecodeEgressRequest(bytes)) {
      requests.insert(name);
      EXPECT_EQ(EncodeEgressRequest(*r).value_or(""), bytes) << name;
    }
    if (PeekEgressRequestId(bytes)) peeked.insert(name);
    if (std::optional<EgressAnswer> a = DecodeEgressAnswer(bytes)) {
      answers.insert(name);
      char out[kEgressAnswerBytes];
      ASSERT_TRUE(EncodeEgressAnswer(*a, out)) << name;
      EXPECT_EQ(std::string(out, sizeof out), bytes) << name;
    }
  }
  const std::set<std::string> valid_requests{"request", "request-local-v4", "request-longest-host",
                                             "request-v6"};
  EXPECT_EQ(requests, valid_requests);
  std::set<std::string> malformed_past_header{
      "request-header-only",  "request-host-past-end", "request-over-longest",
      "request-port-zero",    "request-trailing",      "request-trailing-dot",
      "request-unknown-flag", "request-upper-case",    "request-wildcard"};
  malformed_past_header.insert(valid_requests.begin(), valid_requests.end());
  EXPECT_EQ(peeked, malformed_past_header);
  EXPECT_EQ(answers, (std::set<std::string>{"answer-connected-v4", "answer-connected-v6",
                                            "answer-no-address", "answer-refused-local"}));
}

}  // namespace
}  // namespace skillmcp
