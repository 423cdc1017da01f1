// SkillRunTool::Prepare (declared in skill_run.h): what one skill_run call would run,
// decided before the gate. The refusals that do not depend on the user, in docs/wire.md
// order, then the PreparedRun (the checked script sealed, the skill directory held) and
// the willRun the user approves and the token binds, both from the same values.
#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "broker/catalogue/fsutil.h"
#include "broker/grants/script_env.h"
#include "broker/tools/file_reader.h"
#include "broker/tools/run_audit_call.h"
#include "broker/tools/skill_run.h"
#include "broker/tools/tool_args.h"
#include "shared/relpath.h"

namespace skillmcp {
namespace {

// What the user approves, read off the prepared run, so the preview, the token and the
// run cannot disagree; only the names not set and the warning are the preview's own.
WillRun WillRunOf(const PreparedRun& run, const ScriptEnv& env,
                  std::optional<std::string> interpreter_path) {
  WillRun w;
  w.skill = run.skill;
  w.interpreter = run.interpreter;
  w.interpreter_path = std::move(interpreter_path);
  w.argv.push_back(run.script);
  w.argv.insert(w.argv.end(), run.args.begin(), run.args.end());
  w.cwd = run.skill_dir_path;
  w.timeout_ms = run.timeout_ms;
  w.env_names = run.env_names;
  w.env_not_set = env.not_set;
  w.env_warning = env.warning;
  w.script_identity = run.identity.Binding();
  w.egress = run.egress;
  return w;
}

}  // namespace

std::optional<ToolResult> SkillRunTool::Prepare(const Json& args, Prepared* out) {
  std::string name, script;
  PreparedRun& run = out->run;
  if (auto err = RequireString(args, "name", &name)) return err;
  if (auto err = RequireString(args, "script", &script)) return err;
  if (auto err = StringArray(args, "args", false, 0, kMaxRunArgs, &run.args)) return err;
  if (auto err = OptionalString(args, "confirmToken", &out->token)) return err;

  // 1. unknown skill
  const Skill* skill = deps_.view.FindSkill(name);
  if (skill == nullptr) return UnknownSkill(deps_.view, name);
  // 2. runs blocked on this host
  if (deps_.runs_blocked) return Refusal("RUNS_BLOCKED", *deps_.runs_blocked);
  // 3-4. undeclared or ungranted, then interpreter not runnable (declaration lookup first)
  ScriptLookup lookup = deps_.view.grants->Lookup(name, script);
  switch (lookup.refusal) {
    case ScriptRefusal::kNone:
      break;
    case ScriptRefusal::kUnknownSkill:
      return UnknownSkill(deps_.view, name);
    case ScriptRefusal::kUndeclared:
      return Refusal("SCRIPT_NOT_DECLARED", lookup.message);
    case ScriptRefusal::kUngranted:
      return Refusal("SCRIPT_NOT_GRANTED", lookup.message);
    case ScriptRefusal::kInterpreterUnavailable:
      return Refusal("INTERPRETER_UNAVAILABLE", lookup.message);
  }
  const GrantedScript& granted = *lookup.script;
  // 5. the path: string check (its own message), then resolved beneath the skill
  // directory, a regular file (OpenBundleFile checks the string again, as every read does).
  if (PathRefusal r = CheckRelativePath(script); r != PathRefusal::kNone) {
    return Refusal("PATH_REFUSED", std::string("script path refused: ") + DescribePathRefusal(r));
  }
  OpenedFile opened = OpenBundleFile(skill->dir.get(), script);
  if (!opened.fd) return Refusal("PATH_REFUSED", "script \"" + script + "\": " + opened.error);
  // node's module identity (__filename, relative require) is the real path of the file
  // that was checked, read back from its descriptor.
  std::optional<std::string> real = RealPathOfFd(opened.fd.get(), skill->source + "/" + script);
  if (!real) return Refusal("PATH_REFUSED", "script \"" + script + "\": cannot resolve its path");
  // why: the token binds the bytes the user approved, and the run gets a sealed copy of
  // exactly those bytes, so a script changed after the preview is DRAFT_CHANGED and an
  // in-place write after the confirmation changes nothing that runs.
  std::optional<SealedScript> sealed = SealScript(opened.fd.get());
  if (!sealed) {
    const std::string why =
        errno == EAGAIN ? std::string("it changed while it was being read; call again")
        : errno == EFBIG
            ? "it is over the " + std::to_string(kMaxScriptBytes >> 20) + " MiB script limit"
            : std::string("cannot be read: ") + std::strerror(errno);
    return Refusal("PATH_REFUSED", "script \"" + script + "\": " + why);
  }
  run.skill = skill->name;
  run.interpreter = granted.interpreter;
  run.skill_dir.reset(fcntl(skill->dir.get(), F_DUPFD_CLOEXEC, 0));
  if (!run.skill_dir.valid())
    return Refusal("PATH_REFUSED", "skill \"" + name + "\": " + std::strerror(errno));
  run.skill_dir_fd = run.skill_dir.get();
  run.skill_dir_path = skill->source;
  run.script = granted.script;
  run.script_fd = std::move(sealed->fd);
  run.identity = sealed->identity;
  run.script_real_path = std::move(*real);
  run.timeout_ms = granted.timeout_ms;
  // why from the declaration as it is now: a declaration changed after the preview gives
  // another willRun, so its token is DRAFT_CHANGED.
  run.egress = RunEgressRules(deps_.egress, skill->declared_egress);
  // 6. an allowlist no run can be held to, before the gate shows it (docs/wire.md order).
  if (run.egress)
    if (std::string why = EgressRulesRefusal(*run.egress); !why.empty())
      return Refusal("RUNS_BLOCKED", why);

  ScriptEnv env = ComputeScriptEnv(granted.env, deps_.is_set, deps_.view.grants->from);
  run.env_names = env.names;
  const auto pinned = deps_.interpreter_paths.find(run.interpreter);
  const std::string interpreter_path =
      pinned == deps_.interpreter_paths.end() ? std::string() : pinned->second;
  out->will_run = WillRunOf(
      run, env, deps_.show_interpreter_path ? std::optional(interpreter_path) : std::nullopt);
  if (out->audit) RecordPrepared(run, out->will_run, interpreter_path, &out->audit->facts);
  return std::nullopt;
}

}  // namespace skillmcp
