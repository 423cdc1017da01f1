// The interpreters of this deployment (SKILL_MCP_INTERPRETERS), each pinned once at boot:
// opened by descriptor at an absolute path with every symlink resolved, so a later swap
// of the path changes nothing, and checked to be a binary the operator installed.
// docs/configuration.md, "Interpreters".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/harden/env_store.h"
#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"

namespace skillmcp {

// The interpreters this server knows how to start in a cell (worker/exec.h), by the name
// a declaration's `interpreter:` gives and the variable that pins each one's path.
struct KnownInterpreter {
  std::string_view name;
  std::string_view path_variable;
  std::string_view package;  // what to install where none is found
  InterpreterKind kind;
};
inline constexpr KnownInterpreter kKnownInterpreters[] = {
    {"node", "SKILL_MCP_NODE", "nodejs", InterpreterKind::kNode},
    {"python3", "SKILL_MCP_PYTHON3", "python3", InterpreterKind::kPython3},
};

struct PinnedInterpreter {
  std::string name;  // as declarations name it ("node", "python3")
  InterpreterKind kind = InterpreterKind::kNode;
  UniqueFd fd;          // O_RDONLY|O_CLOEXEC; the worker's fd 5 for this interpreter's runs
  std::string path;     // absolute, symlinks resolved
  std::string dir;      // its install prefix: read and execute for its runs
  std::string version;  // what its file name says ("3.11" for python3.11), "" when nothing
};

struct InterpreterNames {
  std::vector<std::string> names;  // in the order given, each once
  std::string error;               // a value the broker cannot serve: the boot error
};

// Pure: SKILL_MCP_INTERPRETERS (nullopt: unset, the default "node"): comma-separated
// names from kKnownInterpreters, each once, spaces around a name allowed.
InterpreterNames ParseInterpreterNames(const std::optional<std::string>& value);

// Pins `name` (one of kKnownInterpreters): its variable's absolute path, else the first
// on PATH (`default_path` when PATH is unset). "" or why it cannot be used, for the
// runs' refusal. node is checked as it always was (absolute, resolved, a regular
// executable file); every other interpreter must also be an ELF binary owned by root and
// writable by no one else, outside `private_places`, where shims and per-user installs
// live (broker/run/private_places.h).
std::string PinInterpreter(const EnvStore& env, std::string_view name,
                           const std::vector<std::string>& private_places,
                           std::string_view default_path, PinnedInterpreter* out);

// Opens an executable by absolute path and checks the open descriptor (a regular file
// with an execute bit), so what is checked is what runs. "" or why not.
std::string OpenExecutable(const std::string& path, UniqueFd* out);

// A regular file this process may execute, by path.
bool IsExecutableFile(const std::string& path);

// Pure: the first absolute directory of a PATH value holding an executable regular
// `name`; relative entries are skipped (they would depend on the cwd). "" when none.
std::string SearchPath(std::string_view path_value, std::string_view name);

// Pure: the directory an interpreter is installed under, for the absolute real path of
// its binary: the parent of its bin/ directory ("/opt/node" for "/opt/node/bin/node"),
// else the binary's own directory.
std::string InterpreterInstallDir(const std::string& binary_path);

// Pure: the version a python binary's real file name carries ("3.11" for
// "/usr/bin/python3.11"), "" when it carries none.
std::string VersionFromName(const std::string& binary_path);

// Pure: "node /usr/bin/node, python3 3.11 /usr/bin/python3.11": the set for reports.
std::string DescribeInterpreters(const std::vector<PinnedInterpreter>& pinned);

}  // namespace skillmcp
