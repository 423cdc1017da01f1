// fs.suid_dumpable set to 1 for the moment of a check, then put back whatever an
// assertion does. The kernel resets a process's dumpable flag to this sysctl whenever its
// effective or filesystem ids change; at 1 such a process becomes dumpable, open to its
// new uid. The sysctl is host-wide, so tests hold it only around the check.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace skillmcp {

class SuidDumpableOne {
 public:
  SuidDumpableOne() {
    std::ifstream(kKnob) >> before_;
    set_ = !before_.empty() && Write("1\n");
  }
  ~SuidDumpableOne() { PutBack(); }
  SuidDumpableOne(const SuidDumpableOne&) = delete;
  SuidDumpableOne& operator=(const SuidDumpableOne&) = delete;

  // False where it could not be set (a read-only /proc/sys): the caller skips.
  bool set() const { return set_; }
  // Puts the value found back now; false when that failed.
  bool PutBack() {
    if (!set_) return true;
    set_ = false;
    return Write(before_ + "\n");
  }
  const std::string& before() const { return before_; }

 private:
  static constexpr const char* kKnob = "/proc/sys/fs/suid_dumpable";
  static bool Write(const std::string& value) {
    const int fd = open(kKnob, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
    close(fd);
    return ok;
  }
  std::string before_;
  bool set_ = false;
};

}  // namespace skillmcp
