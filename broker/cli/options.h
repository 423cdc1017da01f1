// Command line: `skill-mcp [serve] | doctor | connect [SOCKET]`, --help, --version.
#pragma once

#include <string>

namespace skillmcp {

struct CliOptions {
  enum class Command { kServe, kDoctor, kConnect, kHelp, kVersion, kError };
  Command command = Command::kServe;
  std::string socket_path;  // connect
  std::string error;        // kError: what was wrong, for stderr
};

CliOptions ParseCli(int argc, char** argv);
const char* HelpText();

}  // namespace skillmcp
