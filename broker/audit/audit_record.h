// The operator's audit trail (docs/audit.md): one record per skill_run outcome, built from
// plain facts into named fields, and the two forms a record is written in (the journal's
// native protocol, a marked JSON line). Pure: where a record goes is audit_sink.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skillmcp {

// How one skill_run call ended. Every call that ends ends in exactly one of these, except
// the answers that are a step on the way (a preview with its token, an input_required
// prompt), which write nothing.
enum class AuditOutcome {
  kRan,           // the script ran and ended by itself (any exit code or signal)
  kRefused,       // nothing ran: an argument, grant, path, gate or token refusal
  kDeclined,      // the user said no to the prompt
  kCancelled,     // the prompt was dismissed or withdrawn, or the run was cancelled
  kTimedOut,      // the run was killed at its time limit
  kMemoryKilled,  // the run was killed by the whole-run memory bound
  kSetupFailed,   // the worker failed a setup step: nothing of the script ran
};

// "ran", "refused", "declined", "cancelled", "timed-out", "memory-killed", "setup-failed".
std::string_view AuditOutcomeName(AuditOutcome outcome);
// The journal's MESSAGE_ID of a record of `outcome`: fixed, 32 hex digits.
std::string_view AuditMessageId(AuditOutcome outcome);

// Who is on the other end of the connection: SO_PEERCRED of a socket-activated
// connection, else the broker's own process (stdio).
struct AuditPeer {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  std::string user;          // the uid's name; empty when it has none
  bool from_socket = false;  // SO_PEERCRED; false: the broker's own ids
};

// What a record says. Strings the client chose (skill, script, argv, client name and
// version, the refusal's message) are taken as they came; BuildAuditFields shows them the
// way the confirmation preview does. No variable values and no output, ever: only names,
// counts and sizes.
struct AuditFacts {
  AuditOutcome outcome = AuditOutcome::kRefused;
  AuditPeer peer;
  std::string client_name, client_version;   // initialize's clientInfo; empty: not sent
  std::string skill, script;                 // as asked (or as prepared)
  std::optional<std::string> script_sha256;  // hex, of the sealed bytes that ran or would run
  std::string interpreter;                   // the declared one ("node")
  std::string interpreter_path;              // the pinned binary that runs it
  std::vector<std::string> argv;             // script, then the arguments; empty: not prepared
  std::vector<std::string> env_names;        // the names handed, never values
  bool prepared = false;                     // argv, env_names and the hash are known
  std::string confirm;                       // "elicitation", "input-required", "token", or ""
  std::string confirm_mode;                  // MCP_CONFIRM_MODE: "ask-user", "auto", "refuse"
  std::optional<int64_t> confirm_wait_ms;    // from the preview to the run's start
  std::optional<uint32_t> run_uid;
  std::vector<std::string> layers;  // the isolation layers on (ComputeLayers)
  std::optional<int> exit_code;
  std::optional<std::string> signal;  // "SIGKILL"
  std::optional<int64_t> duration_ms, timeout_ms;
  std::optional<uint64_t> peak_memory_bytes;           // the largest whole-run sample, when sampled
  std::optional<uint64_t> stdout_bytes, stderr_bytes;  // every byte written, kept or not
  // The declared network mode: the hosts the run was allowed ("host:port,port"), and
  // what it reached ("host:port") and was refused ("kind target:port"), as the receipt
  // has them; unset in the other modes.
  std::optional<std::vector<std::string>> egress_allowed;
  std::optional<std::vector<std::string>> egress_reached, egress_refused;
  // What the receipt counted past those lists (its hostsOmitted.hosts and refusedOmitted);
  // written only when not zero.
  uint32_t egress_hosts_omitted = 0, egress_refused_omitted = 0;
  std::string refusal;       // the answer's code (SCRIPT_NOT_GRANTED, TOKEN_REUSED, ...)
  std::string reason;        // the answer's sentence, as the client saw it
  uint64_t lost_before = 0;  // records this broker could not write before this one
};

// Field names and values in a fixed order. Names are journal field names (A-Z, 0-9, _);
// a list is one field holding a JSON array.
using AuditFields = std::vector<std::pair<std::string, std::string>>;

AuditFields BuildAuditFields(const AuditFacts& facts);

// The mark that starts every stderr record: the first key of its JSON object.
inline constexpr std::string_view kAuditJsonMark = "{\"skill_mcp_audit\":1,";

// One line: {"skill_mcp_audit":1, <field>: <value as a string>, ...}\n.
std::string AuditJsonLine(const AuditFields& fields);

// The journal's native protocol (systemd.journal-fields(7), "Native protocol"): KEY=value
// lines, and the length-prefixed form for a value holding a newline.
std::string JournalDatagram(const AuditFields& fields);

}  // namespace skillmcp
