#include "broker/audit/audit_record.h"

#include <nlohmann/json.hpp>

#include "broker/confirm/shown_text.h"

namespace skillmcp {
namespace {

// How many characters of a refusal's sentence a record keeps: the longest sentence the
// broker words, with a client's skill and script names in it, fits.
constexpr size_t kShownReasonChars = 2000;

std::string JsonList(const std::vector<std::string>& items) {
  return nlohmann::json(items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Who(const AuditPeer& peer) {
  std::string who = "uid " + std::to_string(peer.uid);
  if (!peer.user.empty()) who += " (" + peer.user + ")";
  return who;
}

std::string Message(const AuditFacts& f, const std::string& skill, const std::string& script) {
  const std::string what = "script \"" + script + "\" of skill \"" + skill + "\"";
  const std::string who = Who(f.peer);
  switch (f.outcome) {
    case AuditOutcome::kRan: {
      std::string end =
          f.exit_code ? "exit " + std::to_string(*f.exit_code) : "signal " + f.signal.value_or("?");
      return "skill_run: " + who + " ran " + what + ": " + end + " after " +
             std::to_string(f.duration_ms.value_or(0)) + " ms";
    }
    case AuditOutcome::kRefused:
      return "skill_run: " + who + " was refused " + what + ": " + f.refusal;
    case AuditOutcome::kDeclined:
      return "skill_run: the user declined " + what + " for " + who;
    case AuditOutcome::kCancelled:
      return "skill_run: " + what + " for " + who + " was cancelled";
    case AuditOutcome::kTimedOut:
      return "skill_run: " + what + " for " + who + " timed out after " +
             std::to_string(f.duration_ms.value_or(0)) + " ms";
    case AuditOutcome::kMemoryKilled:
      return "skill_run: " + what + " for " + who + " was killed for its memory";
    case AuditOutcome::kSetupFailed:
      return "skill_run: " + what + " for " + who + " did not start: its setup failed";
  }
  return "skill_run";
}

}  // namespace

std::string_view AuditOutcomeName(AuditOutcome outcome) {
  switch (outcome) {
    case AuditOutcome::kRan:
      return "ran";
    case AuditOutcome::kRefused:
      return "refused";
    case AuditOutcome::kDeclined:
      return "declined";
    case AuditOutcome::kCancelled:
      return "cancelled";
    case AuditOutcome::kTimedOut:
      return "timed-out";
    case AuditOutcome::kMemoryKilled:
      return "memory-killed";
    case AuditOutcome::kSetupFailed:
      return "setup-failed";
  }
  return "refused";
}

std::string_view AuditMessageId(AuditOutcome outcome) {
  // Why fixed random ids: `journalctl MESSAGE_ID=...` finds one kind of record across
  // versions and hosts (docs/audit.md lists them).
  switch (outcome) {
    case AuditOutcome::kRan:
      return "0dcbc462ee864253ae73a4181e755f99";
    case AuditOutcome::kRefused:
      return "5399f0b948fb47b283ae1f254df55017";
    case AuditOutcome::kDeclined:
      return "f238294d88c349929f0417e5be2656e0";
    case AuditOutcome::kCancelled:
      return "d51ffaabe0314b10b96c4e4c575fc69c";
    case AuditOutcome::kTimedOut:
      return "b1a079c7e09d4904851f46958168307f";
    case AuditOutcome::kMemoryKilled:
      return "300433b80d404f47a5694f6ba0c0cc2b";
    case AuditOutcome::kSetupFailed:
      return "53f8fbfc34164e9997ae031a1b2f309c";
  }
  return "5399f0b948fb47b283ae1f254df55017";
}

AuditFields BuildAuditFields(const AuditFacts& f) {
  // why shown as the preview shows them: what the client chose may hold control, bidi and
  // invisible characters; the operator reading the trail must see the same visible line
  // the user approved, and no value can draw a line or a field of its own.
  const std::string skill = ShowUntrusted(f.skill);
  const std::string script = ShowUntrusted(f.script);
  AuditFields out;
  auto add = [&out](const char* key, std::string value) {
    out.emplace_back(key, std::move(value));
  };
  add("MESSAGE_ID", std::string(AuditMessageId(f.outcome)));
  add("MESSAGE", Message(f, skill, script));
  // Notice for what did not run as asked, info for a run that ended by itself.
  add("PRIORITY", f.outcome == AuditOutcome::kRan ? "6" : "5");
  add("SYSLOG_IDENTIFIER", "skill-mcp");
  add("SKILL_MCP_OUTCOME", std::string(AuditOutcomeName(f.outcome)));
  add("SKILL_MCP_PEER_UID", std::to_string(f.peer.uid));
  add("SKILL_MCP_PEER_GID", std::to_string(f.peer.gid));
  add("SKILL_MCP_PEER_PID", std::to_string(f.peer.pid));
  if (!f.peer.user.empty()) add("SKILL_MCP_PEER_USER", f.peer.user);
  add("SKILL_MCP_PEER_FROM", f.peer.from_socket ? "socket" : "process");
  if (!f.client_name.empty()) add("SKILL_MCP_CLIENT_NAME", ShowUntrusted(f.client_name));
  if (!f.client_version.empty()) add("SKILL_MCP_CLIENT_VERSION", ShowUntrusted(f.client_version));
  add("SKILL_MCP_SKILL", skill);
  add("SKILL_MCP_SCRIPT", script);
  if (f.prepared) {
    if (f.script_sha256) add("SKILL_MCP_SCRIPT_SHA256", *f.script_sha256);
    add("SKILL_MCP_INTERPRETER", f.interpreter);
    if (!f.interpreter_path.empty()) add("SKILL_MCP_INTERPRETER_PATH", f.interpreter_path);
    std::vector<std::string> shown;
    shown.reserve(f.argv.size());
    for (const std::string& a : f.argv) shown.push_back(ShowUntrusted(a));
    add("SKILL_MCP_ARGV", JsonList(shown));
    add("SKILL_MCP_ENV_NAMES", JsonList(f.env_names));
    if (f.timeout_ms) add("SKILL_MCP_TIMEOUT_MS", std::to_string(*f.timeout_ms));
    if (f.egress_allowed) add("SKILL_MCP_EGRESS_ALLOWED", JsonList(*f.egress_allowed));
  }
  if (!f.confirm_mode.empty()) add("SKILL_MCP_CONFIRM_MODE", f.confirm_mode);
  if (!f.confirm.empty()) add("SKILL_MCP_CONFIRM", f.confirm);
  if (f.confirm_wait_ms) add("SKILL_MCP_CONFIRM_WAIT_MS", std::to_string(*f.confirm_wait_ms));
  if (f.run_uid) add("SKILL_MCP_RUN_UID", std::to_string(*f.run_uid));
  if (f.run_uid) add("SKILL_MCP_LAYERS", JsonList(f.layers));
  if (f.exit_code) add("SKILL_MCP_EXIT_CODE", std::to_string(*f.exit_code));
  if (f.signal) add("SKILL_MCP_SIGNAL", *f.signal);
  if (f.duration_ms) add("SKILL_MCP_DURATION_MS", std::to_string(*f.duration_ms));
  if (f.peak_memory_bytes) add("SKILL_MCP_PEAK_MEMORY_BYTES", std::to_string(*f.peak_memory_bytes));
  if (f.stdout_bytes) add("SKILL_MCP_STDOUT_BYTES", std::to_string(*f.stdout_bytes));
  if (f.stderr_bytes) add("SKILL_MCP_STDERR_BYTES", std::to_string(*f.stderr_bytes));
  if (f.egress_reached) add("SKILL_MCP_EGRESS_REACHED", JsonList(*f.egress_reached));
  // why: a run that reached more hosts than the list holds must not look like one that
  // reached only those.
  if (f.egress_hosts_omitted)
    add("SKILL_MCP_EGRESS_REACHED_OMITTED", std::to_string(f.egress_hosts_omitted));
  if (f.egress_refused) {
    std::vector<std::string> shown;
    for (const std::string& r : *f.egress_refused) shown.push_back(ShowUntrusted(r));
    add("SKILL_MCP_EGRESS_REFUSED", JsonList(shown));
  }
  if (f.egress_refused_omitted)
    add("SKILL_MCP_EGRESS_REFUSED_OMITTED", std::to_string(f.egress_refused_omitted));
  if (!f.refusal.empty()) add("SKILL_MCP_REFUSAL", ShowUntrusted(f.refusal));
  if (!f.reason.empty()) add("SKILL_MCP_REASON", ShowUntrusted(f.reason, kShownReasonChars));
  add("SKILL_MCP_AUDIT_LOST", std::to_string(f.lost_before));
  return out;
}

std::string AuditJsonLine(const AuditFields& fields) {
  nlohmann::ordered_json j;
  j["skill_mcp_audit"] = 1;
  for (const auto& [key, value] : fields) j[key] = value;
  // Every value is valid UTF-8 (shown text, names, numbers); replace is a second line.
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  return line;
}

std::string JournalDatagram(const AuditFields& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    out += key;
    if (value.find('\n') == std::string::npos) {
      out += '=';
      out += value;
    } else {
      // why: a newline would end the value early and start a field the value chose.
      out += '\n';
      uint64_t n = value.size();
      for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);  // LE64
      out += value;
    }
    out += '\n';
  }
  return out;
}

}  // namespace skillmcp
