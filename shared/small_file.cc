#include "shared/small_file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>

#include "shared/unique_fd.h"

namespace skillmcp {

bool ReadSmallFile(const char* path, std::string* out, int* err, size_t cap) {
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    *err = errno;
    return false;
  }
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      return false;
    }
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > cap) {
      *err = EFBIG;
      return false;
    }
  }
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

}  // namespace skillmcp
