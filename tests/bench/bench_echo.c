// The floor for the read-path benchmark (tests/bench/read.mjs): a C program that answers
// each request line on stdin at once with a prebuilt answer, so the figures beside it
// are what the pipe and the node reader cost with no server work at all.
//   bench_echo FILE   answers {"jsonrpc":"2.0","id":<the request's id>,<FILE's bytes>
// FILE holds the rest of the answer line, newline included (e.g. `"result":{}}\n`).
// The request id must be an integer; anything else is answered with id 0.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static char* ReadAll(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char* buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  *len = n;
  return buf;
}

static int WriteAll(struct iovec* iov, int n) {
  while (n > 0) {
    ssize_t w = writev(STDOUT_FILENO, iov, n);
    if (w < 0) return -1;
    while (n > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = (char*)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_echo FILE\n");
    return 2;
  }
  size_t rest_len = 0;
  char* rest = ReadAll(argv[1], &rest_len);
  if (rest == NULL) {
    perror(argv[1]);
    return 2;
  }
  char* line = NULL;
  size_t line_cap = 0;
  while (getline(&line, &line_cap, stdin) > 0) {
    const char* id = strstr(line, "\"id\":");
    long value = id != NULL ? strtol(id + 5, NULL, 10) : 0;
    char head[64];
    int head_len = snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%ld,", value);
    struct iovec iov[2] = {{head, (size_t)head_len}, {rest, rest_len}};
    if (WriteAll(iov, 2) != 0) return 1;
  }
  return 0;
}
