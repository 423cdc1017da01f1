// The floor for the declared network mode's relay (tests/bench/egress.mjs): the least a
// process standing between a script and its server can do. It accepts on 127.0.0.1, opens
// the server's port for each connection and moves the bytes both ways with splice through
// a pipe, as the run's mirror does (worker/egress_relay.cc), with no allowlist, no broker,
// no helper and no sandbox. One connection at a time: the benchmark's are sequential.
//
//   bench_relay UPSTREAM_PORT [UPSTREAM_ADDRESS]   prints its own port on stdout, then
//                                                  serves until killed (address: 127.0.0.1)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kPipeBytes = 256 << 10 };  // the mirror's

struct direction {
  int src, dst, pipe_r, pipe_w;
  size_t queued;
  int eof, shut;
};

// Moves what src has into the pipe and what the pipe holds into dst, until either would
// block; -1 when the connection failed.
static int pump(struct direction *d) {
  while (!d->eof && d->queued < kPipeBytes) {
    ssize_t n = splice(d->src, NULL, d->pipe_w, NULL, kPipeBytes, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) d->queued += (size_t)n;
    else if (n == 0) d->eof = 1;
    else if (errno == EAGAIN) break;
    else if (errno != EINTR) return -1;
  }
  while (d->queued > 0) {
    ssize_t n = splice(d->pipe_r, NULL, d->dst, NULL, d->queued, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) d->queued -= (size_t)n;
    else if (n < 0 && errno == EAGAIN) break;
    else if (n < 0 && errno == EINTR) continue;
    else return -1;
  }
  if (d->eof && d->queued == 0 && !d->shut) {
    shutdown(d->dst, SHUT_WR);
    d->shut = 1;
  }
  return 0;
}

static int open_pipe(struct direction *d) {
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
  d->pipe_r = p[0];
  d->pipe_w = p[1];
  (void)fcntl(p[1], F_SETPIPE_SZ, kPipeBytes);
  return 0;
}

static void serve(int client, struct sockaddr_in to) {
  int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (upstream < 0 || connect(upstream, (struct sockaddr *)&to, sizeof to) != 0) {
    if (upstream >= 0) close(upstream);
    return;
  }
  fcntl(client, F_SETFL, O_NONBLOCK);
  fcntl(upstream, F_SETFL, O_NONBLOCK);
  struct direction up = {client, upstream, -1, -1, 0, 0, 0};
  struct direction down = {upstream, client, -1, -1, 0, 0, 0};
  if (open_pipe(&up) == 0 && open_pipe(&down) == 0) {
    while (!(up.shut && down.shut)) {
      struct pollfd f[2] = {
          {client, (short)((up.eof || up.queued >= kPipeBytes ? 0 : POLLIN) | (down.queued ? POLLOUT : 0)), 0},
          {upstream, (short)((down.eof || down.queued >= kPipeBytes ? 0 : POLLIN) | (up.queued ? POLLOUT : 0)), 0}};
      if (poll(f, 2, -1) < 0 && errno != EINTR) break;
      if (pump(&up) != 0 || pump(&down) != 0) break;
    }
  }
  int fds[] = {up.pipe_r, up.pipe_w, down.pipe_r, down.pipe_w, upstream};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (fds[i] >= 0) close(fds[i]);
}

int main(int argc, char **argv) {
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argc > 1 ? argv[1] : "0")),
                           .sin_addr = {htonl(INADDR_LOOPBACK)}};
  if (argc < 2 || argc > 3 || (argc == 3 && inet_pton(AF_INET, argv[2], &to.sin_addr) != 1)) {
    fprintf(stderr, "usage: bench_relay UPSTREAM_PORT [UPSTREAM_ADDRESS]\n");
    return 2;
  }
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}};
  socklen_t len = sizeof at;
  if (listener < 0 || bind(listener, (struct sockaddr *)&at, sizeof at) != 0 || listen(listener, 16) != 0 ||
      getsockname(listener, (struct sockaddr *)&at, &len) != 0) {
    perror("bench_relay: listen");
    return 1;
  }
  printf("%d\n", ntohs(at.sin_port));
  fflush(stdout);
  for (;;) {
    int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      perror("bench_relay: accept");
      return 1;
    }
    serve(client, to);
    close(client);
  }
}
