// node through the real worker: the script comes from the open fd, never a path.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "shared/run_limits_default.h"
#include "shared/worker_protocol.h"
#include "tests/unit/worker/launcher.h"
#include "tests/unit/worker/test_util.h"

namespace skillmcp::testing {
namespace {

class NodeWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the worker tests switch uids and need root";
    if (access(kNode, X_OK) != 0) GTEST_SKIP() << "no node at " << kNode;
    mkdir(skill_.Sub("scripts").c_str(), 0755);
    mkdir(skill_.Sub("lib").c_str(), 0755);
    mkdir(tmp_.Sub("t").c_str(), 01777);
    chmod(tmp_.Sub("t").c_str(), 01777);
    WriteFile(skill_.Sub("lib/helper.js"), "module.exports = { answer: 42 };\n");
  }

  RunSpec Spec(const std::string& script_rel, std::vector<std::string> args = {}) {
    RunSpec s;
    s.script_path = skill_.Sub(script_rel);
    s.args = std::move(args);
    s.envp = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8",
              "TMPDIR=" + tmp_.Sub("t")};
    s.switch_ids = true;
    s.uid = s.gid = 65534;
    s.limits = kDefaultRunLimits;
    SetSeccomp(s, true);
    return s;
  }

  LaunchResult Run(const RunSpec& spec, int script_fd = -1, int timeout = 60) {
    Launch l;
    l.spec_bytes = EncodeRunSpec(spec).value();
    l.program_path = kNode;
    if (script_fd >= 0)
      l.script_fd = script_fd;
    else
      l.script_path = spec.script_path;
    l.dir_path = skill_.path();
    l.timeout_seconds = timeout;
    return RunWorker(l);
  }

  TempDir skill_;
  TempDir tmp_;
};

TEST_F(NodeWorkerTest, ScriptRunsAsMainModuleWithRealPathRelativeRequireAndVerbatimArgs) {
  WriteFile(skill_.Sub("scripts/main.js"),
            "#!/usr/bin/env node\n"
            "const h = require('../lib/helper');\n"
            "console.log(JSON.stringify({answer: h.answer, file: __filename, dir: __dirname,\n"
            "  main: require.main === module, argv: process.argv.slice(1),\n"
            "  execArgv: process.execArgv, cwd: process.cwd(), uid: process.getuid(),\n"
            "  leaked: typeof globalThis.require}));\n");
  const std::vector<std::string> args = {"--eval=x", "with space", "", "-e", "--", "ünï"};
  const LaunchResult r = Run(Spec("scripts/main.js", args));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  const std::string file = skill_.Sub("scripts/main.js");
  const std::string expected =
      "{\"answer\":42,\"file\":\"" + file + "\",\"dir\":\"" + skill_.Sub("scripts") +
      "\",\"main\":true,\"argv\":[\"" + file +
      "\",\"--eval=x\",\"with space\",\"\",\"-e\",\"--\",\"ünï\"],\"execArgv\":[],\"cwd\":\"" +
      skill_.path() + "\",\"uid\":65534,\"leaked\":\"undefined\"}\n";
  EXPECT_EQ(r.out, expected) << r.Describe();
}

TEST_F(NodeWorkerTest, ScriptNamedLikeAnOptionIsRunNotParsed) {
  WriteFile(skill_.Sub("--eval=process.exit(7)"), "console.log('ran the file');\n");
  const LaunchResult r = Run(Spec("--eval=process.exit(7)"));
  EXPECT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "ran the file\n");
}

TEST_F(NodeWorkerTest, ScriptSwappedForASymlinkAfterOpenStillRunsTheOriginal) {
  const std::string path = skill_.Sub("scripts/swap.js");
  WriteFile(path, "console.log('original content');\n");
  WriteFile(skill_.Sub("target.js"), "console.log('symlink target');\n");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // After the broker's check and open: the path now names a symlink elsewhere.
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(symlink(skill_.Sub("target.js").c_str(), path.c_str()), 0);
  const LaunchResult r = Run(Spec("scripts/swap.js"), fd);
  close(fd);
  EXPECT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "original content\n");
}

TEST_F(NodeWorkerTest, ScriptFdOffsetDoesNotMatter) {
  const std::string path = skill_.Sub("scripts/offset.js");
  WriteFile(path, "console.log('whole file');\n");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char buf[5];
  ASSERT_EQ(read(fd, buf, sizeof(buf)), 5);  // as if the broker had read (hashed) it
  const LaunchResult r = Run(Spec("scripts/offset.js"), fd);
  close(fd);
  EXPECT_EQ(r.out, "whole file\n") << r.Describe();
}

TEST_F(NodeWorkerTest, OrdinaryNodeWorkRunsUnderThePolicyAndTheDefaultLimits) {
  WriteFile(skill_.Sub("scripts/ordinary.js"), R"JS(
const fs = require('fs'), os = require('os'), path = require('path');
const cp = require('child_process'), crypto = require('crypto'), http = require('http');
const { Worker } = require('worker_threads');
const file = path.join(os.tmpdir(), 'ordinary.txt');
fs.writeFileSync(file, 'data');
if (fs.readFileSync(file, 'utf8') !== 'data') throw new Error('fs');
const child = cp.spawnSync('node', ['-e', 'process.exit(3)']);
if (child.status !== 3) throw new Error('spawnSync node: ' + child.status + ' ' + child.error);
const digest = crypto.createHash('sha256').update('x').digest('hex');
const wasm = new WebAssembly.Memory({ initial: 1 });
const w = new Worker('require("worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
w.on('message', (n) => {
  const server = http.createServer((q, a) => a.end('pong')).listen(0, '127.0.0.1', () => {
    http.get('http://127.0.0.1:' + server.address().port, (res) => {
      let body = '';
      res.on('data', (c) => body += c);
      res.on('end', () => {
        server.close();
        console.log(['ok', n, body, digest.slice(0, 8), wasm.buffer.byteLength].join(' '));
      });
    });
  });
});
)JS");
  const LaunchResult r = Run(Spec("scripts/ordinary.js"));
  EXPECT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "ok 42 pong 2d711642 65536\n") << r.Describe();
}

// What an ES module entry reports about itself, on one line of JSON.
constexpr const char* kEsmReport =
    "import { createRequire } from 'node:module';\n"
    "const require = createRequire(import.meta.url);\n"
    "console.log(JSON.stringify({url: import.meta.url, argv: process.argv.slice(1),\n"
    "  execArgv: process.execArgv, helper: require('../lib/helper').answer,\n"
    "  globals: [typeof globalThis.require, typeof globalThis.module, typeof exports,\n"
    "            typeof __filename, typeof __dirname],\n"
    "  mainModule: typeof process.mainModule, uid: process.getuid()}));\n";

std::string EsmReportFor(const std::string& file, const std::string& args_json) {
  return "{\"url\":\"file://" + file + "\",\"argv\":[\"" + file + "\"" + args_json +
         "],\"execArgv\":[],\"helper\":42,\"globals\":[\"undefined\",\"undefined\","
         "\"undefined\",\"undefined\",\"undefined\"],\"mainModule\":\"undefined\","
         "\"uid\":65534}\n";
}

TEST_F(NodeWorkerTest, MjsScriptRunsAsAnEsModuleWithStaticImportAndTopLevelAwait) {
  WriteFile(skill_.Sub("lib/esm.mjs"), "export const v = 'static sibling';\n");
  WriteFile(skill_.Sub("scripts/mod.mjs"),
            std::string("#!/usr/bin/env node\n"
                        "import { v } from '../lib/esm.mjs';\n"
                        "const later = await new Promise((r) => setTimeout(() => r('tla'), 10));\n"
                        "console.log(v, later);\n") +
                kEsmReport);
  const LaunchResult r = Run(Spec("scripts/mod.mjs", {"-e", "x y"}));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "static sibling tla\n" +
                       EsmReportFor(skill_.Sub("scripts/mod.mjs"), ",\"-e\",\"x y\""))
      << r.Describe();
}

TEST_F(NodeWorkerTest, JsInATypeModulePackageRunsAsAnEsModule) {
  WriteFile(skill_.Sub("package.json"), "{\"type\": \"module\"}\n");
  WriteFile(skill_.Sub("lib/esm.js"), "export default 'js sibling';\n");
  WriteFile(skill_.Sub("lib/helper.js"), "export const answer = 42;\n");
  WriteFile(skill_.Sub("lib/helper.cjs"), "module.exports = { answer: 42 };\n");
  WriteFile(skill_.Sub("scripts/main.js"),
            std::string("import v from '../lib/esm.js';\n"
                        "console.log(v, (await import('../lib/helper.js')).answer);\n") +
                "import { createRequire } from 'node:module';\n"
                "const require = createRequire(import.meta.url);\n"
                "console.log(require('../lib/helper.cjs').answer, import.meta.url);\n");
  const LaunchResult r = Run(Spec("scripts/main.js"));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "js sibling 42\n42 file://" + skill_.Sub("scripts/main.js") + "\n")
      << r.Describe();
}

TEST_F(NodeWorkerTest, TheNearestPackageJsonDecidesAndCjsStaysCommonJs) {
  WriteFile(skill_.Sub("package.json"), "{\"type\": \"module\"}\n");
  mkdir(skill_.Sub("scripts/plain").c_str(), 0755);
  WriteFile(skill_.Sub("scripts/plain/package.json"), "{\"name\": \"no-type\"}\n");
  // require, module and __filename exist only in CommonJS: both must run as such.
  WriteFile(skill_.Sub("scripts/plain/main.js"),
            "console.log(require.main === module, __filename);\n");
  WriteFile(skill_.Sub("scripts/main.cjs"), "console.log(require.main === module, __filename);\n");
  for (const char* rel : {"scripts/plain/main.js", "scripts/main.cjs"}) {
    const LaunchResult r = Run(Spec(rel));
    ASSERT_EQ(r.ExitCode(), 0) << rel << r.Describe();
    EXPECT_EQ(r.out, "true " + skill_.Sub(rel) + "\n") << r.Describe();
  }
}

TEST_F(NodeWorkerTest, APackageJsonAboveNodeModulesDoesNotMakeAModule) {
  WriteFile(skill_.Sub("package.json"), "{\"type\": \"module\"}\n");
  mkdir(skill_.Sub("node_modules").c_str(), 0755);
  mkdir(skill_.Sub("node_modules/tool").c_str(), 0755);
  WriteFile(skill_.Sub("node_modules/tool/cli.js"), "console.log(typeof require);\n");
  const LaunchResult r = Run(Spec("node_modules/tool/cli.js"));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "function\n") << r.Describe();
}

TEST_F(NodeWorkerTest, AnInvalidPackageJsonOnTheWayUpFailsAsInNode) {
  WriteFile(skill_.Sub("package.json"), "{ \"type\": \n");
  WriteFile(skill_.Sub("scripts/main.js"), "console.log('should not run');\n");
  const LaunchResult r = Run(Spec("scripts/main.js"));
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("Error parsing " + skill_.Sub("package.json")), std::string::npos)
      << r.Describe();
}

TEST_F(NodeWorkerTest, EsModuleSwappedForASymlinkAfterOpenStillRunsTheOriginal) {
  const std::string path = skill_.Sub("scripts/swap.mjs");
  WriteFile(path, "console.log('original module', import.meta.url);\n");
  WriteFile(skill_.Sub("target.mjs"), "console.log('symlink target');\n");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // After the broker's check and open: the path now names a symlink elsewhere, which
  // node's own resolve would follow (it realpaths every file: URL).
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(symlink(skill_.Sub("target.mjs").c_str(), path.c_str()), 0);
  const LaunchResult r = Run(Spec("scripts/swap.mjs"), fd);
  close(fd);
  EXPECT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "original module file://" + path + "\n") << r.Describe();
}

TEST_F(NodeWorkerTest, EsModuleWithAnUnsettledTopLevelAwaitExits13AsNodeDoes) {
  WriteFile(skill_.Sub("scripts/pending.mjs"),
            "console.log('before');\nawait new Promise(() => {});\nconsole.log('after');\n");
  const LaunchResult r = Run(Spec("scripts/pending.mjs"));
  EXPECT_EQ(r.ExitCode(), 13) << r.Describe();
  EXPECT_EQ(r.out, "before\n");
}

TEST_F(NodeWorkerTest, EsModuleThatThrowsExits1WithTheErrorOnStderr) {
  WriteFile(skill_.Sub("scripts/throws.mjs"), "throw new Error('esm boom');\n");
  const LaunchResult r = Run(Spec("scripts/throws.mjs"));
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_NE(r.err.find("Error: esm boom"), std::string::npos) << r.Describe();
  EXPECT_NE(r.err.find("file://" + skill_.Sub("scripts/throws.mjs")), std::string::npos)
      << r.Describe();
}

TEST_F(NodeWorkerTest, UnknownExtensionInAModuleScopeIsRefusedAsNodeRefusesIt) {
  WriteFile(skill_.Sub("package.json"), "{\"type\": \"module\"}\n");
  WriteFile(skill_.Sub("scripts/tool.ts"), "console.log('should not run');\n");
  const LaunchResult r = Run(Spec("scripts/tool.ts"));
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("unknown file extension \".ts\""), std::string::npos) << r.Describe();
}

TEST_F(NodeWorkerTest, ForkFromAnEsModuleStartsAPlainNode) {
  WriteFile(skill_.Sub("scripts/child.cjs"),
            "process.send({execArgv: process.execArgv, argv: process.argv.slice(1)});\n");
  WriteFile(skill_.Sub("scripts/fork.mjs"),
            "import { fork } from 'node:child_process';\n"
            "const c = fork(new URL('./child.cjs', import.meta.url), ['a']);\n"
            "c.on('message', (m) => { console.log(JSON.stringify(m)); c.disconnect(); });\n");
  const LaunchResult r = Run(Spec("scripts/fork.mjs"));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "{\"execArgv\":[],\"argv\":[\"" + skill_.Sub("scripts/child.cjs") +
                       "\",\"a\"]}\n")
      << r.Describe();
}

TEST_F(NodeWorkerTest, JsOfNoDeclaredTypeWithModuleSyntaxRunsAsAnEsModule) {
  WriteFile(skill_.Sub("lib/esm.mjs"), "export const v = 'detected';\n");
  WriteFile(skill_.Sub("scripts/typeless.js"),
            "import { v } from '../lib/esm.mjs';\n"
            "console.log(v, await Promise.resolve('tla'), typeof require, import.meta.url,\n"
            "  process.emit === Object.getPrototypeOf(process).emit);\n");
  const LaunchResult r = Run(Spec("scripts/typeless.js"));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out,
            "detected tla undefined file://" + skill_.Sub("scripts/typeless.js") + " true\n")
      << r.Describe();
  // node prints nothing when it detects: not the CommonJS compile's "To load an ES module".
  EXPECT_EQ(r.err, "") << r.Describe();
}

TEST_F(NodeWorkerTest, DetectedModuleUnderATypelessPackageJsonWarnsAsNodeDoes) {
  WriteFile(skill_.Sub("package.json"), "{\"name\": \"typeless\"}\n");
  WriteFile(skill_.Sub("scripts/typeless.js"), "export {};\nconsole.log('ran');\n");
  const LaunchResult r = Run(Spec("scripts/typeless.js"));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_NE(r.err.find("[MODULE_TYPELESS_PACKAGE_JSON] Warning: Module type of file://" +
                       skill_.Sub("scripts/typeless.js") + " is not specified"),
            std::string::npos)
      << r.Describe();
  EXPECT_EQ(r.err.find("To load an ES module"), std::string::npos) << r.Describe();
}

TEST_F(NodeWorkerTest, DeclaredCommonJsWithModuleSyntaxIsASyntaxErrorAsInNode) {
  WriteFile(skill_.Sub("package.json"), "{\"type\": \"commonjs\"}\n");
  WriteFile(skill_.Sub("scripts/cjs.js"), "import fs from 'fs';\nconsole.log('ran');\n");
  const LaunchResult r = Run(Spec("scripts/cjs.js"));
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("SyntaxError: Cannot use import statement outside a module"),
            std::string::npos)
      << r.Describe();
}

TEST_F(NodeWorkerTest, ErrorsOfACommonJsScriptKeepTheirOwnSourceLine) {
  // A typeless script goes through the detection path: its errors must still propagate
  // untouched, pointing at the script's line, not at the bootstrap.
  const std::string path = skill_.Sub("scripts/fails.js");
  WriteFile(path, "const a = 1;\nnull.boom;\n");
  const LaunchResult r = Run(Spec("scripts/fails.js"));
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_EQ(r.err.rfind(path + ":2\nnull.boom;\n", 0), 0u) << r.Describe();
  EXPECT_NE(r.err.find("TypeError: Cannot read properties of null"), std::string::npos);
}

TEST_F(NodeWorkerTest, NoGlobalOfNodeEvalReachesTheScriptNowOrLater) {
  // node -e defines require, module, exports, __filename, __dirname, one lazy global per
  // builtin module and process._eval, and puts `module` back after its program returns;
  // the detection of module syntax swaps process.emit for the compile only.
  const std::string probe =
      "const names = ['require', 'module', 'exports', '__filename', '__dirname', 'fs',\n"
      "  'path', 'http', 'child_process', 'worker_threads'];\n"
      "const seen = () => names.filter((k) => Object.getOwnPropertyDescriptor(globalThis, k)\n"
      "  !== undefined || globalThis[k] !== undefined).join(',');\n"
      "const now = seen();\n"
      "setTimeout(() => console.log('[' + now + '] [' + seen() + ']', typeof process._eval,\n"
      "  Object.hasOwn(process, 'emit')));\n";
  WriteFile(skill_.Sub("scripts/globals.js"), probe);
  WriteFile(skill_.Sub("scripts/globals.mjs"), probe);
  for (const char* rel : {"scripts/globals.js", "scripts/globals.mjs"}) {
    const LaunchResult r = Run(Spec(rel));
    EXPECT_EQ(r.ExitCode(), 0) << rel << r.Describe();
    EXPECT_EQ(r.out, "[] [] undefined false\n") << rel << r.Describe();
  }
}

TEST_F(NodeWorkerTest, DynamicImportFromACommonJsScriptWorks) {
  WriteFile(skill_.Sub("lib/esm.mjs"), "export const v = 'from esm';\n");
  WriteFile(skill_.Sub("scripts/dyn.js"),
            "import('../lib/esm.mjs').then((m) => console.log(m.v));\n");
  const LaunchResult r = Run(Spec("scripts/dyn.js"));
  EXPECT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "from esm\n");
}

TEST_F(NodeWorkerTest, MemoryBombStopsUnderTheDefaultLimits) {
  WriteFile(skill_.Sub("scripts/mem.js"),
            "const keep = [];\n"
            "for (let i = 0; i < 64; i++) keep.push(Buffer.alloc(64 << 20, 1));\n"
            "console.log('survived 4 GiB');\n");
  const LaunchResult r = Run(Spec("scripts/mem.js"));
  ASSERT_FALSE(r.timed_out) << r.Describe();
  EXPECT_EQ(r.out.find("survived"), std::string::npos) << r.Describe();
  EXPECT_NE(r.wait_status, 0) << r.Describe();
}

TEST_F(NodeWorkerTest, GigabyteWriteStopsAtTheDefaultFsize) {
  WriteFile(skill_.Sub("scripts/fill.js"),
            "const fs = require('fs'), path = require('path'), os = require('os');\n"
            "const fd = fs.openSync(path.join(os.tmpdir(), 'fill'), 'w');\n"
            "const block = Buffer.alloc(1 << 20);\n"
            "for (let i = 0; i < 1024; i++) fs.writeSync(fd, block);\n"
            "console.log('wrote 1 GiB');\n");
  const LaunchResult r = Run(Spec("scripts/fill.js"));
  // node ignores SIGXFSZ, so the write past the limit fails with EFBIG instead.
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("EFBIG"), std::string::npos) << r.Describe();
  struct stat st;
  ASSERT_EQ(stat(tmp_.Sub("t/fill").c_str(), &st), 0);
  EXPECT_LE(st.st_size, static_cast<off_t>(256 * kMiB));
}

TEST_F(NodeWorkerTest, CpuSpinStopsAtRlimitCpu) {
  WriteFile(skill_.Sub("scripts/spin.js"), "for (;;) {}\n");
  RunSpec s = Spec("scripts/spin.js");
  s.limits.cpu_seconds = 1;
  const LaunchResult r = Run(s, -1, 20);
  ASSERT_FALSE(r.timed_out) << r.Describe();
  EXPECT_TRUE(r.Signal() == SIGXCPU || r.Signal() == SIGKILL) << r.Describe();
}

}  // namespace
}  // namespace skillmcp::testing
