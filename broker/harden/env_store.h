// The broker's copy of its environment. At boot every variable is moved here and the
// exec-time environ block is wiped (see environ_scrub.h). Values live in libsodium
// guarded memory (no access except inside WithValue) and are wiped on destruction.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

class EnvStore {
 public:
  EnvStore();
  ~EnvStore();
  EnvStore(EnvStore&&) noexcept;
  EnvStore& operator=(EnvStore&&) noexcept;

  // Copies every NAME=value of `envp` (the later of two duplicates wins).
  static EnvStore Capture(char** envp);

  // Sets or replaces one variable (used for systemd credentials and tests).
  void Set(std::string_view name, std::string_view value);

  // True when present with a usable value: not blank (whitespace only) and not an
  // unexpanded placeholder such as "${MCP_SKILLS_PATH}". docs/wire.md: those count as unset.
  bool IsSet(std::string_view name) const;

  // A copy of the value for configuration variables that are not secrets (paths, modes,
  // JSON grants). nullopt when !IsSet(name).
  std::optional<std::string> GetConfig(std::string_view name) const;

  // Opens the guarded value read-only for the duration of `fn` only. Returns false (and
  // does not call fn) when !IsSet(name).
  bool WithValue(std::string_view name, const std::function<void(std::string_view)>& fn) const;

  // Every captured name, sorted (for doctor and tests; never values).
  std::vector<std::string> Names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The blank/placeholder rule on its own, for values that do not come from the store.
bool IsUsableValue(std::string_view value);

}  // namespace skillmcp
