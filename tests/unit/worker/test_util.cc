#include "tests/unit/worker/test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "seccomp/compile.h"
#include "seccomp/policy.h"

namespace skillmcp::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/skillmcp-worker-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  nftw(
      path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); },
      16, FTW_DEPTH | FTW_PHYS);
}

void WriteFile(const std::string& path, const std::string& content, int mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("open " + path);
  if (write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    close(fd);
    throw std::runtime_error("write " + path);
  }
  fchmod(fd, static_cast<mode_t>(mode));
  close(fd);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::map<std::string, std::string> KeyValues(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& line : Lines(text)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    for (char& c : value)
      if (c == '\t') c = ' ';
    const size_t b = value.find_first_not_of(' ');
    const size_t e = value.find_last_not_of(' ');
    value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
    out[line.substr(0, colon)] = value;
  }
  return out;
}

namespace {

// A program compiled as the broker compiles it at boot; the test aborts if it cannot be.
std::string CompiledOrAbort(int (*compile)(std::string*), const char* what) {
  std::string bpf;
  if (int rc = compile(&bpf); rc < 0) {
    std::fprintf(stderr, "cannot compile %s: %s\n", what, std::strerror(-rc));
    std::abort();
  }
  return bpf;
}

}  // namespace

const std::string& CompiledMirrorPolicy() {
  static const std::string compiled =
      CompiledOrAbort(&seccomp::CompileMirrorPolicy, "the mirror's policy");
  return compiled;
}

void SetSeccomp(RunSpec& spec, bool on) {
  static const std::string compiled = CompiledOrAbort(
      [](std::string* bpf) { return seccomp::CompileWorkerPolicy(bpf); }, "the seccomp policy");
  spec.seccomp = on;
  spec.seccomp_bpf = on ? compiled : std::string();
  spec.mirror_bpf = on && spec.egress_declared ? CompiledMirrorPolicy() : std::string();
}

ModuleDir CheckedModuleDir(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return {path, 0, 1};
  return {path, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

}  // namespace skillmcp::testing
