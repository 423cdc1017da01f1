// Small helpers for the worker tests: temp dirs, files, /proc/self/status parsing.
#pragma once

#include "shared/worker_protocol.h"

#include <map>
#include <string>
#include <vector>

namespace skillmcp::testing {

// The node the worker tests run.
inline constexpr const char* kNode = "/usr/bin/node";

// A fresh mkdtemp directory (mode 0755, so a switched uid can enter it), removed
// recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& content, int mode = 0644);
std::vector<std::string> Lines(const std::string& text);
// "Key:\tvalue" lines -> {"Key": "value"} (value with tabs turned into single spaces).
std::map<std::string, std::string> KeyValues(const std::string& text);

// The module directory at `path` as the broker sends it (broker/run/module_dirs.h): with
// the device and inode its lstat finds now; an absent one gets an identity (0, 1) that no
// directory has.
ModuleDir CheckedModuleDir(const std::string& path);

// Turns seccomp on (with the policy compiled as the broker compiles it at boot) or off;
// in the declared network mode (set egress_declared first) the mirror's filter with it.
void SetSeccomp(RunSpec& spec, bool on);

// The mirror's filter as the broker compiles it at boot (seccomp CompileMirrorPolicy).
const std::string& CompiledMirrorPolicy();

}  // namespace skillmcp::testing
