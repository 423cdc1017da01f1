#include "broker/tools/file_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shared/base64.h"
#include "shared/open_beneath.h"
#include "shared/relpath.h"
#include "shared/utf8.h"

namespace skillmcp {

OpenedFile OpenBundleFile(int skill_dir_fd, std::string_view rel_path) {
  OpenedFile out;
  // Why: the string check comes first so shapes that should never be joined are
  // refused even when they would resolve inside the skill.
  if (PathRefusal r = CheckRelativePath(rel_path); r != PathRefusal::kNone) {
    out.error = DescribePathRefusal(r);
    return out;
  }
  out.fd = OpenRegularBeneath(skill_dir_fd, rel_path);
  if (!out.fd) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      out.error = "no such file in this skill's bundle; skill_load lists its files";
    } else if (err == EXDEV || err == ELOOP) {
      out.error = "the path resolves outside this skill's directory (a symlink leads out), "
                  "so it is not served";
    } else if (err == EINVAL) {
      out.error = "not a regular file (a directory, FIFO, socket or device), so it is "
                  "not served";
    } else {
      out.error = std::string("could not open the file: ") + strerror(err);
    }
    return out;
  }
  struct stat st {};
  if (fstat(out.fd.get(), &st) != 0) {
    out.error = std::string("could not inspect the file: ") + strerror(errno);
    out.fd.reset();
    return out;
  }
  out.size = static_cast<uint64_t>(st.st_size);
  return out;
}

bool IsText(std::string_view bytes) {
  return bytes.find('\0') == std::string_view::npos && IsValidUtf8(bytes);
}

std::optional<FileContent> ReadBounded(const OpenedFile& file, uint64_t cap) {
  FileContent out;
  uint64_t want = std::min(file.size, cap);
  // Why: allocate from the checked size and the cap, never from what the file yields.
  out.bytes.resize(static_cast<size_t>(want));
  size_t got = 0;
  while (got < want) {
    ssize_t n = pread(file.fd.get(), out.bytes.data() + got, want - got,
                      static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;  // the file shrank since fstat
    got += static_cast<size_t>(n);
  }
  out.bytes.resize(got);
  out.truncated = file.size > cap;
  // The cut comes first and the text test looks at exactly the bytes returned (docs/wire.md
  // §2): a cut through a multi-byte character makes the entry base64, never a
  // silently shortened text.
  out.text = IsText(out.bytes);
  return out;
}

std::string Base64(std::string_view bytes) {
  std::string out;
  AppendBase64(&out, bytes);
  return out;
}

}  // namespace skillmcp
