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

constexpr const char* kNode = "/usr/bin/node";

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

TEST_F(NodeWorkerTest, MjsScriptIsRefusedWithAClearMessage) {
  WriteFile(skill_.Sub("scripts/mod.mjs"), "console.log('should not run');\n");
  const LaunchResult r = Run(Spec("scripts/mod.mjs"));
  EXPECT_EQ(r.ExitCode(), 1) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("ES module scripts (.mjs) are not supported"), std::string::npos)
      << r.Describe();
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
