#include "broker/catalogue/fsutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "shared/unique_fd.h"

namespace skillmcp {

bool ReadDirNames(int dirfd, size_t max_names, std::vector<std::string>* names, bool* more) {
  names->clear();
  *more = false;
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    int e = errno;
    close(fd);
    errno = e;
    return false;
  }
  errno = 0;
  while (dirent* ent = readdir(dir)) {
    std::string_view name = ent->d_name;
    if (name == "." || name == "..") continue;
    if (names->size() >= max_names) {
      *more = true;
      break;
    }
    names->emplace_back(name);
    errno = 0;
  }
  int e = errno;
  closedir(dir);
  if (e != 0 && !*more) {
    errno = e;
    return false;
  }
  std::sort(names->begin(), names->end());
  return true;
}

std::optional<std::string> RealPathOfFd(int fd, const std::string& fallback) {
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  char buf[PATH_MAX + 1];
  ssize_t n = readlink(link.c_str(), buf, PATH_MAX);
  if (n > 0 && buf[0] == '/') {
    std::string path(buf, static_cast<size_t>(n));
    if (path.find(" (deleted)") == std::string::npos) return path;
  }
  // No /proc: resolve the string, then make sure it names the inode we hold.
  char* real = realpath(fallback.c_str(), nullptr);
  if (real == nullptr) return std::nullopt;
  std::string path(real);
  free(real);
  struct stat a {
  }, b{};
  if (fstat(fd, &a) != 0 || stat(path.c_str(), &b) != 0) return std::nullopt;
  if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return std::nullopt;
  return path;
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) == nullptr) return path;
  return JoinPath(buf, path);
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return std::string(path);
  if (path.size() == 1) return "";  // "/" has no name
  return std::string(path.substr(slash + 1));
}

bool IsSameOrInside(std::string_view child, std::string_view parent) {
  if (child == parent) return true;
  if (parent == "/") return !child.empty() && child[0] == '/';
  return child.size() > parent.size() && child.substr(0, parent.size()) == parent &&
         child[parent.size()] == '/';
}

std::string JoinPath(std::string_view a, std::string_view b) {
  std::string out(a);
  if (out.empty() || out.back() != '/') out.push_back('/');
  out.append(b);
  return out;
}

bool ReadCapped(int fd, size_t cap, std::string* out, bool* more) {
  out->clear();
  *more = false;
  // Size the buffer from the file, not the cap: a 2 KiB SKILL.md must not cost a 256 KiB
  // zero-fill. The limit is still cap + 1 bytes (one more tells "there is more").
  struct stat st {};
  size_t limit = cap + 1;
  size_t size = limit;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size = std::min(limit, static_cast<size_t>(st.st_size) + 1);
  }
  size_t got = 0;
  while (got < limit) {
    if (got == out->size()) out->resize(std::min(limit, std::max(size, got * 2)));
    ssize_t n = read(fd, out->data() + got, out->size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > cap) {
    *more = true;
    got = cap;
  }
  out->resize(got);
  return true;
}

}  // namespace skillmcp
