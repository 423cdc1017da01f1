#include "broker/run/prepared_run.h"

#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp {
namespace {

constexpr size_t kHashChunk = 65536;

}  // namespace

std::string ScriptIdentity::Binding() const {
  std::string hex(sha256.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), sha256.data(), sha256.size());
  hex.pop_back();  // the terminating NUL
  return std::to_string(dev) + ":" + std::to_string(ino) + ":" + std::to_string(size) + ":" + hex;
}

std::optional<ScriptIdentity> ReadScriptIdentity(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return std::nullopt;
  }
  ScriptIdentity id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = static_cast<uint64_t>(st.st_size);
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  unsigned char buf[kHashChunk];
  uint64_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    crypto_hash_sha256_update(&state, buf, static_cast<size_t>(n));
    off += static_cast<uint64_t>(n);
  }
  // why: a file written while it was hashed has no one identity; refuse rather than
  // bind a hash of bytes that were never the file's content at one moment.
  if (off != id.size) {
    errno = EAGAIN;
    return std::nullopt;
  }
  crypto_hash_sha256_final(&state, id.sha256.data());
  return id;
}

}  // namespace skillmcp
