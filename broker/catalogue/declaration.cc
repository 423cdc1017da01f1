#include "broker/catalogue/declaration.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "broker/catalogue/yaml_strict.h"
#include "shared/relpath.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

constexpr std::string_view kReserved[] = {
    // The server's own configuration and the host's markers: a skill asking for these
    // could read where the other skills live, the owner's grants, or the host's secrets.
    "MCP_SKILLS_PATH",
    "MCP_SKILL_RUN",
    "SKILLS_DIR",
    "MCP_HOST_METER_FILE",
    "MCP_BLOB_BASE_URL",
    "MCP_BLOB_SIGNING_KEY",
    "MCP_SKILL_ALLOW_UNSCRUBBED",
    // systemd's credentials directory: the files behind it are the broker's secrets.
    "CREDENTIALS_DIRECTORY",
    // Interpreter and loader hooks: any of these would run code of the skill's choosing
    // inside node before the declared script, or swap the libraries it loads.
    "NODE_OPTIONS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
};
constexpr std::string_view kReservedPrefixes[] = {
    // Why: MCP_CONFIRM_SECRET signs confirmation tokens; a script holding it (or any
    // other confirmation setting) could mint or shape its own approvals.
    "MCP_CONFIRM_",
    // Why: the broker's own configuration (run-as user, worker, node, seccomp,
    // namespaces, limits) tells a script how it is fenced; none of it is the skill's.
    "SKILL_MCP_",
};

std::string LineOf(const YAML::Node& node, int line_offset) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) return "";
  return " (line " + std::to_string(mark.line + 1 + line_offset) + ")";
}

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

bool IsString(const YAML::Node& n) { return ResolveCore(n) == CoreType::kString; }

// Collects unknown keys of one mapping as "<prefix>key (line N)".
void NoteUnknownKeys(const YAML::Node& map, std::initializer_list<std::string_view> known,
                     const std::string& prefix, int line_offset,
                     std::vector<std::string>* unknown) {
  for (const auto& kv : map) {
    const std::string& key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    unknown->push_back(Quoted(prefix + key) + LineOf(kv.first, line_offset));
  }
}

// Returns "" when the version is the integer 1, else why it is refused.
// Why so narrow: `"1"`, `1.5` or a 65-bit number may mean another revision of the block to
// some other reader; only the exact integer is known to mean what this server reads, so
// anything else is refused (fail closed), as the TypeScript server refuses it.
std::string CheckVersion(const YAML::Node& v) {
  CoreType type = ResolveCore(v);
  if (type == CoreType::kUndefined) {
    return "it has no `version`; add `version: 1` to the mcp-host block";
  }
  // An integer whose value is exactly 1 (`1`, `+1`, `0x1`); a huge one is not, as a double.
  if (type == CoreType::kInt && CoreNumber(v) == 1.0) return "";
  std::string shown = CoreTypeName(type);
  if (type == CoreType::kString) shown = Quoted(v.Scalar()) + " (a string)";
  if (type == CoreType::kInt || type == CoreType::kFloat) shown = v.Scalar();
  if (type == CoreType::kNull) shown = "null";
  return "it declares version " + shown +
         ", and this server reads only `version: " + std::to_string(kDeclarationMajorVersion) +
         "` (an integer)";
}

// Reads one run entry's env list; bad or reserved names are dropped and reported.
std::vector<std::string> ReadRunEnv(const YAML::Node& env, const std::string& where,
                                    int line_offset, std::vector<std::string>* issues) {
  std::vector<std::string> names;
  CoreType type = ResolveCore(env);
  if (type == CoreType::kUndefined || type == CoreType::kNull) return names;
  if (type != CoreType::kSequence) {
    issues->push_back(where + ": `env` must be a list of variable names but is " +
                      CoreTypeName(type) + LineOf(env, line_offset) +
                      "; the script is declared with no variables");
    return names;
  }
  size_t index = 0;
  for (const auto& item : env) {
    ++index;
    if (!IsString(item) || !IsUsableVariableName(item.Scalar())) {
      issues->push_back(where + ": env entry " + std::to_string(index) + LineOf(item, line_offset) +
                        " is not a variable name (letters, digits and '_', not starting "
                        "with a digit); it was dropped");
      continue;
    }
    const std::string& name = item.Scalar();
    if (IsReservedVariable(name)) {
      issues->push_back(where + ": the variable " + Quoted(name) +
                        " is reserved for the server itself and can never be given to a "
                        "script; it was dropped");
      continue;
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

int64_t ReadTimeout(const YAML::Node& node, const std::string& where, int line_offset,
                    std::vector<std::string>* issues) {
  CoreType type = ResolveCore(node);
  if (type == CoreType::kUndefined) return kDefaultTimeoutMs;
  std::optional<double> seconds = CoreNumber(node);
  if (!seconds || std::isnan(*seconds) || *seconds <= 0) {
    issues->push_back(where + ": `timeout` must be a positive number of seconds" +
                      LineOf(node, line_offset) + "; the default of " +
                      std::to_string(kDefaultTimeoutMs / 1000) + " s applies");
    return kDefaultTimeoutMs;
  }
  if (*seconds * 1000.0 > static_cast<double>(kMaxTimeoutMs)) {
    issues->push_back(where + ": `timeout` " + node.Scalar() + " s is over the ceiling of " +
                      std::to_string(kMaxTimeoutMs / 1000) + " s" + LineOf(node, line_offset) +
                      "; it was clamped to " + std::to_string(kMaxTimeoutMs / 1000) + " s");
    return kMaxTimeoutMs;
  }
  return std::max<int64_t>(1, std::llround(*seconds * 1000.0));
}

void ReadRuns(const YAML::Node& run, int line_offset, Declaration* d,
              std::vector<std::string>* unknown) {
  CoreType type = ResolveCore(run);
  if (type == CoreType::kUndefined || type == CoreType::kNull) return;
  if (type != CoreType::kSequence) {
    d->issues.push_back("`run` must be a list of scripts but is " +
                        std::string(CoreTypeName(type)) + LineOf(run, line_offset) +
                        "; no script from this skill is declared");
    return;
  }
  size_t index = 0;
  for (const auto& entry : run) {
    std::string where = "run entry " + std::to_string(index + 1);
    std::string prefix = "run[" + std::to_string(index) + "].";
    ++index;
    if (ResolveCore(entry) != CoreType::kMap) {
      d->issues.push_back(where + LineOf(entry, line_offset) +
                          " must be a mapping with `script` and `interpreter`; it was dropped");
      continue;
    }
    NoteUnknownKeys(entry, {"script", "interpreter", "env", "timeout"}, prefix, line_offset,
                    unknown);
    const YAML::Node script = entry["script"];
    if (!IsString(script)) {
      d->issues.push_back(where + LineOf(entry, line_offset) +
                          ": `script` must be a string "
                          "path inside the skill, but is " +
                          CoreTypeName(ResolveCore(script)) + "; the entry was dropped");
      continue;
    }
    // Why: a declared path is later opened beneath the skill directory; refusing
    // non-plain shapes here means an escape attempt never becomes a runnable entry.
    if (PathRefusal r = CheckRelativePath(script.Scalar()); r != PathRefusal::kNone) {
      d->issues.push_back(where + LineOf(entry, line_offset) + ": the script path " +
                          Quoted(script.Scalar()) + " is refused: " + DescribePathRefusal(r) +
                          "; the entry was dropped");
      continue;
    }
    where += " (" + script.Scalar() + ")";
    bool seen = std::any_of(d->runs.begin(), d->runs.end(),
                            [&](const DeclaredRun& r) { return r.script == script.Scalar(); });
    if (seen) {
      // Why: two entries for one script would make the grant and the timeout ambiguous.
      d->issues.push_back(where + LineOf(entry, line_offset) +
                          ": the script is declared twice; only the first entry counts");
      continue;
    }
    const YAML::Node interpreter = entry["interpreter"];
    if (!IsString(interpreter) || interpreter.Scalar().empty()) {
      // Why: the interpreter is never inferred (not from the extension, not from a shebang).
      d->issues.push_back(where + LineOf(entry, line_offset) +
                          ": `interpreter` must name the interpreter (e.g. node); the entry "
                          "was dropped");
      continue;
    }
    DeclaredRun out;
    out.script = script.Scalar();
    out.interpreter = interpreter.Scalar();
    out.env = ReadRunEnv(entry["env"], where, line_offset, &d->issues);
    out.timeout_ms = ReadTimeout(entry["timeout"], where, line_offset, &d->issues);
    d->runs.push_back(std::move(out));
  }
}

void ReadServerEnv(const YAML::Node& env, int line_offset, Declaration* d,
                   std::vector<std::string>* unknown) {
  CoreType type = ResolveCore(env);
  if (type == CoreType::kUndefined || type == CoreType::kNull) return;
  if (type != CoreType::kSequence) {
    d->issues.push_back("`env` must be a list of {name, secret} entries but is " +
                        std::string(CoreTypeName(type)) + LineOf(env, line_offset) +
                        "; it was ignored");
    return;
  }
  size_t index = 0;
  for (const auto& item : env) {
    std::string prefix = "env[" + std::to_string(index++) + "].";
    const YAML::Node name = ResolveCore(item) == CoreType::kMap ? item["name"] : YAML::Node();
    if (!name.IsDefined() || !IsString(name) || !IsUsableVariableName(name.Scalar())) {
      d->issues.push_back("env entry " + std::to_string(index) + LineOf(item, line_offset) +
                          " needs a `name` that is a variable name; it was dropped");
      continue;
    }
    NoteUnknownKeys(item, {"name", "secret", "description"}, prefix, line_offset, unknown);
    if (IsReservedVariable(name.Scalar())) {
      d->issues.push_back("the env entry " + Quoted(name.Scalar()) +
                          " names a variable reserved for the server itself; it was dropped");
      continue;
    }
    DeclaredEnvField field{name.Scalar(), true};
    const YAML::Node secret = item["secret"];
    CoreType secret_type = ResolveCore(secret);
    if (secret_type == CoreType::kBool) {
      field.secret = secret.Scalar()[0] == 't' || secret.Scalar()[0] == 'T';
    } else if (secret_type != CoreType::kUndefined) {
      // Fail closed: a value we cannot read as true/false is treated as secret.
      d->issues.push_back("the env entry " + Quoted(name.Scalar()) +
                          ": `secret` must be true or false" + LineOf(secret, line_offset) +
                          "; it is treated as secret");
    }
    d->env.push_back(std::move(field));
  }
}

// ^[A-Za-z0-9.*-]+$
bool IsEgressPattern(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '*' || c == '-';
  });
}

void ReadEgress(const YAML::Node& egress, int line_offset, Declaration* d) {
  CoreType type = ResolveCore(egress);
  if (type == CoreType::kUndefined || type == CoreType::kNull) return;
  if (type != CoreType::kSequence) {
    d->issues.push_back("`egress` must be a list of host names but is " +
                        std::string(CoreTypeName(type)) + LineOf(egress, line_offset) +
                        "; it was ignored");
    return;
  }
  size_t index = 0;
  for (const auto& host : egress) {
    const std::string where = "`egress` entry " + std::to_string(++index);
    if (!IsString(host)) {
      d->issues.push_back(where + LineOf(host, line_offset) + " is not a string; it was dropped");
      continue;
    }
    // Why: the entry is shown to the owner as a host to allow; anything beyond a host name
    // or a wildcard pattern (^[A-Za-z0-9.*-]+$) could not be one and could mislead.
    if (!IsEgressPattern(host.Scalar())) {
      d->issues.push_back(where + LineOf(host, line_offset) + " " + Quoted(host.Scalar()) +
                          " is not a host name (letters, digits, '.', '*' and '-' only); it "
                          "was dropped");
      continue;
    }
    if (std::find(d->egress.begin(), d->egress.end(), host.Scalar()) == d->egress.end())
      d->egress.push_back(host.Scalar());
  }
}

}  // namespace

bool IsReservedVariable(std::string_view name) {
  for (std::string_view prefix : kReservedPrefixes)
    if (name.substr(0, prefix.size()) == prefix) return true;
  return std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved);
}

bool IsUsableVariableName(std::string_view name) {
  // Why 128: a name is echoed in previews and problems; a longer one is no real variable.
  return name.size() <= 128 && IsEnvName(name);
}

Declaration InterpretDeclaration(const YAML::Node& block, int line_offset) {
  Declaration d;
  CoreType type = ResolveCore(block);
  if (type != CoreType::kMap) {
    d.issues.push_back(
        "the mcp-host block was refused: it must be a mapping with `version` "
        "and `run`, but it is " +
        std::string(CoreTypeName(type)) + LineOf(block, line_offset) +
        "; no script from this skill can run");
    return d;
  }
  // Why: an unknown major version may change what a key means; guessing could run
  // something the author never declared, so the whole block is refused.
  if (std::string refusal = CheckVersion(block["version"]); !refusal.empty()) {
    d.issues.push_back("the mcp-host block was refused: " + refusal +
                       "; no script from this skill can run");
    return d;
  }
  std::vector<std::string> unknown;
  NoteUnknownKeys(block, {"version", "run", "env", "egress"}, "", line_offset, &unknown);
  ReadRuns(block["run"], line_offset, &d, &unknown);
  ReadServerEnv(block["env"], line_offset, &d, &unknown);
  ReadEgress(block["egress"], line_offset, &d);
  // One issue per unknown key, ahead of the others.
  std::vector<std::string> unknown_issues;
  for (const auto& u : unknown) {
    unknown_issues.push_back("the mcp-host block has the key " + u +
                             ", which this server does not know; it was ignored (known: "
                             "version, run[script, interpreter, env, timeout], env[name, "
                             "secret, description], egress)");
  }
  d.issues.insert(d.issues.begin(), unknown_issues.begin(), unknown_issues.end());
  d.ok = true;
  return d;
}

}  // namespace skillmcp
