#include "broker/harden/credentials.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "shared/worker_protocol.h"
#include "shared/unique_fd.h"

namespace skillmcp {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// Reads one credential file into `buf`; returns an empty string on success or why not.
std::string ReadCredential(int dirfd, const char* name, std::vector<char>* buf, size_t* len) {
  // why: O_NOFOLLOW and the fstat check keep a symlink or FIFO dropped into the
  // directory from pulling in another file or hanging the boot.
  UniqueFd fd(openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return "cannot open: " + ErrnoText(errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return "cannot stat: " + ErrnoText(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_size > static_cast<off_t>(kCredentialMaxBytes))
    return "larger than " + std::to_string(kCredentialMaxBytes) + " bytes";
  size_t got = 0;
  while (got < buf->size()) {
    ssize_t n = read(fd.get(), buf->data() + got, buf->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "cannot read: " + ErrnoText(errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  // why: the size check above is racy (the file can grow); the read is the real bound.
  if (got > kCredentialMaxBytes)
    return "larger than " + std::to_string(kCredentialMaxBytes) + " bytes";
  *len = got;
  return "";
}

}  // namespace

CredentialsResult LoadCredentials(std::string_view dir, EnvStore& store) {
  CredentialsResult r;
  if (dir.empty()) {
    r.detail = "no credentials directory named";
    return r;
  }
  std::string path(dir);
  UniqueFd dirfd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd.valid()) {
    r.detail = "cannot open " + path + ": " + ErrnoText(errno);
    return r;
  }
  int listfd = dup(dirfd.get());  // fdopendir takes ownership of its own descriptor
  DIR* d = listfd >= 0 ? fdopendir(listfd) : nullptr;
  if (d == nullptr) {
    if (listfd >= 0) close(listfd);
    r.detail = "cannot list " + path + ": " + ErrnoText(errno);
    return r;
  }
  r.used = true;
  std::vector<char> buf(kCredentialMaxBytes + 1, '\0');  // one extra byte detects growth
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (!IsEnvName(name)) {
      r.refused.push_back(name + ": not a valid variable name");
      continue;
    }
    size_t len = 0;
    std::string why = ReadCredential(dirfd.get(), name.c_str(), &buf, &len);
    if (why.empty()) {
      std::string_view value(buf.data(), len);
      if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
      store.Set(name, value);
      r.loaded.push_back(name);
    } else {
      r.refused.push_back(name + ": " + why);
    }
    // why: the plain-heap copy of a secret is wiped as soon as the store holds it.
    sodium_memzero(buf.data(), buf.size());
  }
  closedir(d);
  std::sort(r.loaded.begin(), r.loaded.end());
  std::sort(r.refused.begin(), r.refused.end());
  return r;
}

}  // namespace skillmcp
