// systemd credentials (LoadCredential=/SetCredential=): each file in
// $CREDENTIALS_DIRECTORY becomes a variable of the EnvStore, so an owner's secrets
// reach the broker without ever passing through an environment block.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "broker/harden/env_store.h"

namespace skillmcp {

inline constexpr size_t kCredentialMaxBytes = 64 * 1024;

struct CredentialsResult {
  bool used = false;                 // a directory was named and opened
  std::vector<std::string> loaded;   // names set in the store, sorted
  std::vector<std::string> refused;  // "<file>: <why>", for the log
  std::string detail;                // why the directory itself could not be used
};

// Loads every regular file of `dir` (at most kCredentialMaxBytes, named like an
// environment variable) into `store`; the value is the content with one trailing
// newline removed. A credential replaces a variable of the same name.
CredentialsResult LoadCredentials(std::string_view dir, EnvStore& store);

}  // namespace skillmcp
