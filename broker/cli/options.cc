#include "broker/cli/options.h"

#include <string_view>

namespace skillmcp {

const char* HelpText() {
  return R"(skill-mcp: a hardened MCP server for Agent Skills (stdio JSON-RPC)

Usage:
  skill-mcp [serve]          serve the configured skills over stdin/stdout (default)
  skill-mcp doctor           print which isolation layers are in force here; exits
                             non-zero when one the configuration demands is off
  skill-mcp connect [SOCKET] relay stdin/stdout to a socket-activated skill-mcp
                             (default /run/skill-mcp/skill-mcp.sock)
  skill-mcp --help | --version

Skills:
  MCP_SKILLS_PATH            ':'-separated roots (set by mcp-host; wins)
  SKILLS_DIR                 ':'-separated roots for local use
  (neither)                  the bundled example skill

Running scripts (skill_run):
  MCP_SKILL_RUN              JSON [{"skill","script","env"?}]: the owner's grant
  MCP_CONFIRM_MODE           ask-user (default) | auto | refuse
  MCP_CONFIRM_ELICITATION    on (default) | off
  MCP_CONFIRM_TTL_SECONDS    confirmation token lifetime (default 600)
  MCP_CONFIRM_SECRET         token signing key, so tokens survive a restart
  MCP_SKILL_ALLOW_UNSCRUBBED 1: run scripts even if the environ block stays readable
  SKILL_MCP_NODE             the node binary to pin (default: node on PATH at start)
  SKILL_MCP_USER             user a root broker switches to (default skill-mcp)
  SKILL_MCP_RUN_AS           user scripts run as (default skill-mcp-run)
  SKILL_MCP_WORKER           the worker binary (default: beside the build or in libexecdir)
  SKILL_MCP_SECCOMP          on (default) | off: the worker's syscall filter
  SKILL_MCP_NAMESPACES       off (default) | on: each run in its own user and mount
                             namespace (private /tmp, the other skills hidden)
  SKILL_MCP_LIMIT_*          per-run limits: NPROC, AS_MB, DATA_MB, CPU_SECONDS, FSIZE_MB,
                             NOFILE (positive integers)

stdout carries JSON-RPC only; diagnostics go to stderr. See skill-mcp(1) and README.md.
)";
}

CliOptions ParseCli(int argc, char** argv) {
  CliOptions o;
  int i = 1;
  if (i < argc) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h" || a == "help") {
      o.command = CliOptions::Command::kHelp;
      return o;
    }
    if (a == "--version" || a == "-V") {
      o.command = CliOptions::Command::kVersion;
      return o;
    }
    if (a == "serve") {
      ++i;
    } else if (a == "doctor") {
      o.command = CliOptions::Command::kDoctor;
      ++i;
    } else if (a == "connect") {
      o.command = CliOptions::Command::kConnect;
      o.socket_path = "/run/skill-mcp/skill-mcp.sock";
      ++i;
      if (i < argc) o.socket_path = argv[i++];
    }
  }
  if (i < argc) {
    o.command = CliOptions::Command::kError;
    o.error = std::string("unexpected argument \"") + argv[i] +
              "\"; run `skill-mcp --help` for the commands (configuration is read from "
              "environment variables, not flags)";
  }
  return o;
}

}  // namespace skillmcp
