#include "tests/fuzz/rig.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "broker/catalogue/scan.h"

namespace skillmcp::fuzz {
namespace {

constexpr const char* kSkillMd =
    "---\n"
    "name: demo\n"
    "description: A skill the fuzz targets serve.\n"
    "mcp-host:\n"
    "  version: 1\n"
    "  run:\n"
    "    - script: scripts/run.js\n"
    "      interpreter: node\n"
    "      env: [FUZZ_GREETING]\n"
    "      timeout: 5\n"
    "---\n"
    "# Demo\n\nRead references/notes.md first.\n";

void WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Wires skill_run's `withdraw` hook as serve.cc does, on a tree where SkillRunDeps has one
// (templates, so this file builds with and without it).
template <typename Deps, typename S>
auto WireWithdraw(Deps& deps, S* session, int) -> decltype(deps.withdraw, void()) {
  deps.withdraw = [session](const Json& id) {
    session->WithdrawRequest(id, "the skill_run call this prompt was for was cancelled");
  };
}
template <typename Deps, typename S>
void WireWithdraw(Deps&, S*, long) {}

std::string* g_root = nullptr;

void RemoveRoot() {
  std::error_code ec;
  if (g_root != nullptr) std::filesystem::remove_all(*g_root, ec);
}

std::string MakeSkillRoot() {
  const char* tmp = getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/skill-mcp-fuzz-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) abort();
  g_root = new std::string(templ);
  atexit(RemoveRoot);
  std::filesystem::path skill = std::filesystem::path(templ) / kSkillName;
  WriteFile(skill / "SKILL.md", kSkillMd);
  WriteFile(skill / kScript, "console.log(JSON.stringify(process.argv));\n");
  WriteFile(skill / "references/notes.md", "# Notes\n\nNothing to see.\n");
  WriteFile(skill / "references/deeper/more.txt", "more\n");
  return templ;
}

}  // namespace

Rig& GetRig() {
  static Rig* rig = [] {
    // As the broker's process state (HardenProcess): a write to a closed pipe is an
    // error return, never a signal that kills the process.
    signal(SIGPIPE, SIG_IGN);
    Rig* r = new Rig();
    r->catalogue = ScanCatalogue({MakeSkillRoot()}, "fuzz");
    // Not hosted, no MCP_SKILL_RUN: the declaration grants its own scripts.
    r->grants = DecideGrants(r->catalogue, std::nullopt, false);
    r->tokens = ConfirmTokens::CreateFromSecret("fuzz confirmation secret");
    if (r->catalogue.skills.size() != 1 || r->tokens == nullptr) {
      fprintf(stderr, "fuzz rig: the demo skill did not load\n");
      abort();
    }
    return r;
  }();
  return *rig;
}

bool IsDispatched(const Json& tool_result) {
  if (!tool_result.is_object() || !tool_result.contains("content")) return false;
  const Json& content = tool_result["content"];
  if (!content.is_array() || content.empty() || !content[0].contains("text")) return false;
  Json payload = Json::parse(content[0]["text"].get<std::string>(), nullptr, false);
  if (!payload.is_object()) return false;
  auto error = payload.find("error");
  auto message = payload.find("message");
  return error != payload.end() && *error == "RUN_NOT_STARTED" && message != payload.end() &&
         message->is_string() &&
         message->get<std::string>().find(kRecorderRefusal) != std::string::npos;
}

GateConfig DefaultGate() { return GateConfig{}; }

std::optional<StartRefusal> RecorderRunner::StartCommitted(PreparedRun run, Commit commit,
                                                           Done on_done) {
  if (commit && !commit())
    return StartRefusal{StartProblem::kUnavailable, "withdrawn before it started"};
  // Why trap: skill_run asks Busy() first; a start while one is in flight would have
  // spent the caller's approval on a run the supervisor then refuses.
  if (Busy()) __builtin_trap();
  ++started;
  starts_.push_back({std::move(run.args), !refusal_.has_value()});
  if (refusal_) return refusal_;
  done_ = std::move(on_done);
  return std::nullopt;
}

bool RecorderRunner::Finish(RunResult result) {
  if (!done_) return false;
  Done done = std::move(done_);
  done_ = nullptr;
  done(std::move(result));
  return true;
}

Server::Server(GateConfig gate, int64_t now, bool deferred) : now_(now) {
  Rig& rig = GetRig();
  int in[2];
  if (!loop_.ok() || pipe2(in, O_CLOEXEC | O_NONBLOCK) != 0) return;
  in_read_ = in[0];
  in_write_ = in[1];
  out_ = memfd_create("fuzz-out", MFD_CLOEXEC);
  tokens_ = ConfirmTokens::CreateRandom();
  if (out_ < 0 || tokens_ == nullptr) return;
  session_ = std::make_unique<Session>(loop_, in_read_, out_);
  runner_ = std::make_unique<RecorderRunner>();
  SkillRunDeps deps;
  deps.view = rig.view();
  deps.is_set = [](std::string_view name) { return name == "FUZZ_GREETING"; };
  deps.gate = std::move(gate);
  deps.tokens = tokens_.get();
  deps.runner = runner_.get();
  Session* session = session_.get();
  // Returns the request's id, which newer trees use and older ones drop.
  std::optional<int64_t>* timeout = &prompt_timeout_ms_;
  deps.elicit = [session, timeout](OrderedJson params, int64_t timeout_ms,
                                   std::function<void(const Json*, const Json*)> handler) {
    return session->SendRequest("elicitation/create", std::move(params),
                                timeout->value_or(timeout_ms), std::move(handler));
  };
  WireWithdraw(deps, session, 0);
  int64_t* clock = &now_;
  deps.now = [clock] { return *clock; };
  RunToolHandler* run = nullptr;
  if (deferred) {
    deps_ = std::move(deps);
    run_gate_ = std::make_unique<DeferredRunTool>([session] { session->HoldInput(); },
                                                  [session] { session->ReleaseInput(); });
    run = run_gate_.get();
  } else {
    run_tool_ = std::make_unique<SkillRunTool>(std::move(deps));
    run = run_tool_.get();
  }
  server_ = std::make_unique<McpServer>(*session_, rig.view(), "fuzz", run);
  server_->Register();
  session_->OnClosed([this] { loop_.Stop(); });
  ok_ = session_->Start();
}

Server::~Server() {
  server_.reset();
  run_gate_.reset();
  run_tool_.reset();
  runner_.reset();
  session_.reset();
  if (in_write_ >= 0) close(in_write_);
  if (in_read_ >= 0) close(in_read_);
  if (out_ >= 0) close(out_);
}

void Server::Drain() {
  // Each message is handled synchronously once read; a few idle rounds flush it all.
  for (int i = 0; i < 64 && !loop_.stopped(); ++i) loop_.RunOnce(0);
}

bool Server::Feed(std::string_view lines) {
  while (!lines.empty()) {
    ssize_t w = write(in_write_, lines.data(), lines.size());
    if (w <= 0) return false;  // over one pipe buffer: the caller keeps inputs smaller
    lines.remove_prefix(static_cast<size_t>(w));
    Drain();
  }
  return true;
}

bool Server::FinishRun(RunResult result) {
  if (!runner_->Finish(std::move(result))) return false;
  Drain();
  return true;
}

bool Server::OpenRunSide() {
  if (run_gate_ == nullptr || run_gate_->open()) return false;
  run_gate_->Open(std::make_unique<SkillRunTool>(std::move(deps_)));
  Drain();
  return true;
}

void Server::Close() {
  if (in_write_ >= 0) close(in_write_);
  in_write_ = -1;
  for (int i = 0; i < 1000 && !loop_.stopped(); ++i) loop_.RunOnce(0);
}

std::vector<Json> Server::TakeOutput() {
  std::vector<Json> out;
  off_t end = lseek(out_, 0, SEEK_END);
  if (end < 0 || static_cast<size_t>(end) <= out_read_) return out;
  std::string text(static_cast<size_t>(end) - out_read_, '\0');
  if (pread(out_, text.data(), text.size(), static_cast<off_t>(out_read_)) !=
      static_cast<ssize_t>(text.size())) {
    abort();
  }
  out_read_ = static_cast<size_t>(end);
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    // Why trap: every message the server writes is one whole line of valid JSON.
    if (nl == std::string::npos) __builtin_trap();
    Json line = Json::parse(text.substr(start, nl - start), nullptr, false);
    if (line.is_discarded() || !line.is_object() || line.value("jsonrpc", "") != "2.0") {
      __builtin_trap();
    }
    out.push_back(std::move(line));
    start = nl + 1;
  }
  return out;
}

}  // namespace skillmcp::fuzz
