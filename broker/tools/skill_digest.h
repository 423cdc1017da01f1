// sha256 digests of bundle files for the skills extension (docs/wire.md §9),
// read through the same OpenBundleFile descriptor discipline as resources/read and
// skill_file, so a digest covers exactly the bytes those paths would serve.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skillmcp {

struct FileDigest {
  std::string digest;  // "sha256:" + 64 lowercase hex digits; empty on failure
  uint64_t size = 0;   // bytes hashed (the same bytes the digest covers)
  std::string error;   // a sentence for a person when digest is empty
};

// Hashes the whole file at `rel_path` beneath `skill_dir_fd`. A file longer than
// `max_bytes` is refused rather than hashed in part (it could not be served whole).
FileDigest DigestBundleFile(int skill_dir_fd, std::string_view rel_path, uint64_t max_bytes);

// "sha256:<hex>" of `bytes` (tests and callers holding bytes already).
std::string Sha256Digest(std::string_view bytes);

}  // namespace skillmcp
