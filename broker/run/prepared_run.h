// What exactly will run, decided once by skill_run (broker/tools) and moved down to the
// supervisor: the checked script descriptor and its identity, the argv, the environment
// names and the limits. The supervisor runs this descriptor; it never reopens by path.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shared/unique_fd.h"

namespace skillmcp {

// Which file a confirmation was given for: the inode and the bytes it held.
struct ScriptIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  std::array<unsigned char, 32> sha256{};

  // "dev:ino:size:hex(sha256)": the bytes a confirmation token binds (docs/wire.md).
  std::string Binding() const;
};

// Reads the identity from an open regular file: fstat, then a sha256 of its bytes read
// with pread from offset 0 (the descriptor's own offset is left alone). nullopt with
// errno set when the file cannot be read, or changes size while it is read.
std::optional<ScriptIdentity> ReadScriptIdentity(int fd);

// Move-only: one descriptor, one run.
struct PreparedRun {
  PreparedRun() = default;
  PreparedRun(PreparedRun&&) = default;
  PreparedRun& operator=(PreparedRun&&) = default;
  PreparedRun(const PreparedRun&) = delete;
  PreparedRun& operator=(const PreparedRun&) = delete;

  std::string skill;             // directory name
  int skill_dir_fd = -1;         // Skill::dir (borrowed; O_PATH|O_DIRECTORY)
  std::string skill_dir_path;    // Skill::source: its real path (a namespaced run binds it)
  std::string script;            // declared relative path, string-checked
  UniqueFd script_fd;            // the descriptor that was checked and hashed; it runs
  ScriptIdentity identity;       // of script_fd, bound by the confirmation token
  std::string script_real_path;  // real absolute path (node's module identity)
  std::vector<std::string> args;
  std::vector<std::string> env_names;  // sorted; values come from the EnvStore at spawn
  int64_t timeout_ms = 60000;
};

}  // namespace skillmcp
