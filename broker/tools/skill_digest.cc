#include "broker/tools/skill_digest.h"

#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "broker/tools/file_reader.h"

namespace skillmcp {
namespace {

std::string Format(crypto_hash_sha256_state* state) {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(state, out);
  char hex[crypto_hash_sha256_BYTES * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, out, sizeof out);  // lowercase
  return std::string("sha256:") + hex;
}

}  // namespace

std::string Sha256Digest(std::string_view bytes) {
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  crypto_hash_sha256_update(&state, reinterpret_cast<const unsigned char*>(bytes.data()),
                            bytes.size());
  return Format(&state);
}

FileDigest DigestBundleFile(int skill_dir_fd, std::string_view rel_path, uint64_t max_bytes) {
  FileDigest out;
  OpenedFile file = OpenBundleFile(skill_dir_fd, rel_path);
  if (!file.fd) {
    out.error = file.error;
    return out;
  }
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  // Why a fixed buffer, read to EOF rather than to the stat size: the heap stays bounded,
  // and the size reported is the count of the bytes actually hashed.
  unsigned char buf[65536];
  uint64_t total = 0;
  for (;;) {
    ssize_t n = pread(file.fd.get(), buf, sizeof buf, static_cast<off_t>(total));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.error = std::string("could not read the file: ") + std::strerror(errno);
      return out;
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > max_bytes) {
      out.error = "the file is larger than " + std::to_string(max_bytes) + " bytes";
      return out;
    }
    crypto_hash_sha256_update(&state, buf, static_cast<size_t>(n));
  }
  out.size = total;
  out.digest = Format(&state);
  return out;
}

}  // namespace skillmcp
