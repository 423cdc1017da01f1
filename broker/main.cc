#include <cstdio>

#include "broker/cli/connect.h"
#include "broker/cli/options.h"
#include "broker/cli/serve.h"
#include "config.h"

int main(int argc, char** argv) {
  using skillmcp::CliOptions;
  CliOptions opts = skillmcp::ParseCli(argc, argv);
  switch (opts.command) {
    case CliOptions::Command::kHelp:
      fputs(skillmcp::HelpText(), stdout);
      return 0;
    case CliOptions::Command::kVersion:
      printf("skill-mcp %s\n", SKILL_MCP_VERSION);
      return 0;
    case CliOptions::Command::kError:
      fprintf(stderr, "skill-mcp: %s\n", opts.error.c_str());
      return 2;
    case CliOptions::Command::kDoctor:
      return skillmcp::RunDoctorCommand();
    case CliOptions::Command::kConnect:
      return skillmcp::RunConnect(opts.socket_path);
    case CliOptions::Command::kServe:
      break;
  }
  return skillmcp::RunServe();
}
