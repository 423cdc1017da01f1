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

#include "shared/egress_allowlist.h"
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

// The largest script entry point a run accepts. Why a cap: the whole file is copied into
// the broker's memory (below) and a hosted broker has a hard data limit.
inline constexpr uint64_t kMaxScriptBytes = 64ull << 20;

// The script as it will run: a sealed in-memory copy of its bytes and their identity.
struct SealedScript {
  UniqueFd fd;  // memfd, sealed against every write, grow, shrink and further seal
  ScriptIdentity identity;
};

// Copies an open regular file (pread from offset 0; its own offset is left alone) into a
// sealed memfd, hashing the bytes copied. Why a copy: a descriptor pins the inode, not
// its bytes; an in-place write after the preview must not change what runs, so the run
// gets exactly the bytes the token binds. nullopt with errno set when the file cannot be
// read, is not a regular file (EINVAL), is over kMaxScriptBytes (EFBIG), or changes size
// while it is copied (EAGAIN).
std::optional<SealedScript> SealScript(int fd);

// Move-only: one descriptor, one run.
struct PreparedRun {
  PreparedRun() = default;
  PreparedRun(PreparedRun&&) = default;
  PreparedRun& operator=(PreparedRun&&) = default;
  PreparedRun(const PreparedRun&) = delete;
  PreparedRun& operator=(const PreparedRun&) = delete;

  std::string skill;             // directory name
  std::string interpreter;       // the declared interpreter ("node", the pinned one runs)
  int skill_dir_fd = -1;         // skill_dir below, or Skill::dir (borrowed) when unset
  // Why a duplicate of Skill::dir: a live catalogue may replace the skill, closing its
  // descriptor, while the run waits for its prompt or starts; the number must not come to
  // name another file meanwhile.
  UniqueFd skill_dir;
  std::string skill_dir_path;    // Skill::source: its real path (a namespaced run binds it)
  std::string script;            // declared relative path, string-checked
  UniqueFd script_fd;            // SealScript's sealed copy of the checked file; it runs
  ScriptIdentity identity;       // of those bytes, bound by the confirmation token
  std::string script_real_path;  // real absolute path (node's module identity)
  std::vector<std::string> args;
  std::vector<std::string> env_names;  // sorted; values come from the EnvStore at spawn
  int64_t timeout_ms = 60000;
  // The hosts the run may reach in the declared network mode (broker/run/network_mode.h),
  // fixed when it was confirmed; nothing in the other modes.
  std::optional<std::vector<EgressRule>> egress;
};

}  // namespace skillmcp
