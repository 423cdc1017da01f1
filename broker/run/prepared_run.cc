#include "broker/run/prepared_run.h"

#include <sodium.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp {
namespace {

constexpr size_t kHashChunk = 65536;

bool WriteAll(int fd, const unsigned char* data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string ScriptIdentity::Binding() const {
  std::string hex(sha256.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), sha256.data(), sha256.size());
  hex.pop_back();  // the terminating NUL
  return std::to_string(dev) + ":" + std::to_string(ino) + ":" + std::to_string(size) + ":" + hex;
}

std::optional<SealedScript> SealScript(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return std::nullopt;
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxScriptBytes) {
    errno = EFBIG;
    return std::nullopt;
  }
  SealedScript out;
  out.fd = UniqueFd(memfd_create("skill-mcp-script", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!out.fd) return std::nullopt;
  ScriptIdentity& id = out.identity;
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
    // why: more bytes than fstat said means a writer is growing it; stop before the cap
    // can be outrun.
    if (off + static_cast<uint64_t>(n) > id.size) {
      errno = EAGAIN;
      return std::nullopt;
    }
    crypto_hash_sha256_update(&state, buf, static_cast<size_t>(n));
    if (!WriteAll(out.fd.get(), buf, static_cast<size_t>(n))) return std::nullopt;
    off += static_cast<uint64_t>(n);
  }
  // why: a file written while it was copied has no one identity; refuse rather than
  // bind a hash of bytes that were never the file's content at one moment.
  if (off != id.size) {
    errno = EAGAIN;
    return std::nullopt;
  }
  crypto_hash_sha256_final(&state, id.sha256.data());
  // why: sealed, the copy can change neither in the broker nor in the script that
  // receives it as fd 6; F_SEAL_SEAL keeps the seals from being lifted.
  if (fcntl(out.fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return std::nullopt;
  return out;
}

}  // namespace skillmcp
