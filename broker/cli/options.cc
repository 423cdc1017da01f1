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
  skill-mcp [COMMAND] --help  this text (after any command too); --version: the version

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
  SKILL_MCP_STATE_DIR        the host-wide state: spent tokens (with a secret) and the
                             per-run uid locks (default $STATE_DIRECTORY if it ends
                             in skill-mcp, else
                             /var/lib/skill-mcp when started as root, else
                             $XDG_RUNTIME_DIR/skill-mcp)
  MCP_SKILL_ALLOW_UNSCRUBBED 1: run scripts even if the environ block stays readable
  SKILL_MCP_INTERPRETERS     interpreters scripts may name: node, python3 (default node)
  SKILL_MCP_NODE             the node binary to pin (default: node on PATH at start)
  SKILL_MCP_PYTHON3          the python3 binary to pin (default: python3 on PATH at start;
                             an ELF binary owned by root, never a shim)
  SKILL_MCP_USER             user a root broker switches to (default skill-mcp)
  SKILL_MCP_RUN_AS           user scripts run as (default skill-mcp-run); with per-run
                             uids, the group every run keeps
  SKILL_MCP_RUN_UIDS         A-B | off: each run under a uid of its own from this range
                             (default 1879048192-1879113727 where the broker can switch
                             uids and has a state dir; a named range is required; ids
                             of 0-60000, /etc/passwd, group, subuid, subgid are refused;
                             from 4096 uids up, each connection's waiting worker holds one)
  SKILL_MCP_WORKER           the worker binary (default: beside the build or in libexecdir)
  SKILL_MCP_SECCOMP          on (default) | off: the worker's syscall filter (and, in the
                             declared mode, the run's mirror's own)
  SKILL_MCP_NAMESPACES       auto (default) | on | off: each run in its own user, mount,
                             pid and IPC namespace, and network in the declared mode
                             (private /tmp, the other skills hidden, its own
                             processes); auto where the host allows
  SKILL_MCP_LANDLOCK         auto (default) | on | off: the per-run filesystem allowlist
  SKILL_MCP_NETWORK          declared (default) | on | off: declared: each run reaches only
                             the hosts its skill declares (off where runs get no
                             namespaces); off: no IPv4 or IPv6 socket at all
  SKILL_MCP_EGRESS_ALLOW     host[:port],...: narrows the declared hosts (default ports
                             443, 80; none: no host); a wildcard over a public suffix
                             (*.github.io), or reaching under one (*.amazonaws.com to
                             x.s3.amazonaws.com), only where a pattern names it
  SKILL_MCP_EGRESS_LOCAL     on | off (default): let declared hosts resolve to loopback,
                             link-local, multicast or this host's addresses (a
                             metadata service only at a pinned address)
  SKILL_MCP_EGRESS_RESOLVE   host=address,...: connect there for that name
  SKILL_MCP_EGRESS_SOCKET    the socket-activated egress helper's socket (unset: the
                             broker starts skill-mcp-egress itself)
  SKILL_MCP_EGRESS_HELPER    the skill-mcp-egress binary (default: beside the build or in
                             libexecdir)
  TMPDIR                     where each run's private scratch TMPDIR is made (default /tmp)
  SKILL_MCP_AUDIT            auto (default) | journal | stderr: where each skill_run
                             outcome's audit record goes (auto: the journal where its
                             socket is, else one {"skill_mcp_audit":1,...} line on stderr)
  SKILL_MCP_WATCH            on | off (default on where inotify works): watch the skills,
                             rescan as they change and send list_changed
  SKILL_MCP_LIMIT_*          per-run limits: NPROC, AS_MB, DATA_MB, CPU_SECONDS, FSIZE_MB,
                             NOFILE (positive integers)
  SKILL_MCP_LIMIT_RUN_MEMORY_MB
                             a run's memory in all (MiB), every process summed every
                             50 ms or more; past it, or with more processes than a
                             sample reads, the run is killed (default twice DATA_MB;
                             0 or off: none)

stdout carries JSON-RPC only; diagnostics go to stderr. See skill-mcp(1) and README.md.
)";
}

namespace {

bool IsHelpFlag(std::string_view a) { return a == "--help" || a == "-h"; }
bool IsVersion(std::string_view a) { return a == "--version" || a == "-V"; }

CliOptions Unexpected(std::string_view arg, std::string_view why) {
  CliOptions o;
  o.command = CliOptions::Command::kError;
  o.error = "unexpected argument \"" + std::string(arg) + "\"" + std::string(why) +
            "; run `skill-mcp --help` for the commands (configuration is read from "
            "environment variables, not flags)";
  return o;
}

}  // namespace

CliOptions ParseCli(int argc, char** argv) {
  // --help and --version win wherever they stand, so `skill-mcp connect --help` prints help
  // instead of trying a socket named "--help".
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (IsHelpFlag(a)) return CliOptions{CliOptions::Command::kHelp, {}, {}};
    if (IsVersion(a)) return CliOptions{CliOptions::Command::kVersion, {}, {}};
  }
  CliOptions o;
  int i = 1;
  if (i < argc) {
    std::string_view a = argv[i];
    if (a == "help") {
      o.command = CliOptions::Command::kHelp;
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
      if (i < argc) {
        std::string_view sock = argv[i];
        if (sock.starts_with('-')) {
          return Unexpected(sock,
                            " (connect takes no options; write a socket path that "
                            "starts with '-' as ./-name)");
        }
        o.socket_path = argv[i++];
      }
    }
  }
  if (i < argc) return Unexpected(argv[i], "");
  return o;
}

}  // namespace skillmcp
