// One real MCP session for the deploy tests: the official SDK client (reused from
// tests/integration/node_modules) spawns COMMAND (e.g. `podman exec -i CTR
// skill-mcp connect`, or `podman run --rm -i IMAGE`), then lists, loads, reads a
// file and runs a script through the two-step confirmation. It prints one JSON
// report on stdout; the calling test judges it. The client never declares the
// elicitation capability, so the server must use the two-step token flow.
//
// usage: node mcp-session.mjs '<json plan>'
//   plan: { command: [argv...],
//           load?: "skill", file?: ["skill", "path"],
//           run?: { name, script, args? },      // first call, then the call with the token
//           inspect?: "shell command",          // run while the session is still open
//           previewOnly?: true }                // stop after the first skill_run call
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const sdkRoot = resolve(here, '..', 'integration', 'node_modules', '@modelcontextprotocol', 'sdk');
if (!existsSync(join(sdkRoot, 'package.json'))) {
  console.error(`${sdkRoot} is missing: run \`npm ci --prefix tests/integration\` first`);
  process.exit(2);
}
const sdk = (p) => import(pathToFileURL(join(sdkRoot, 'dist', 'esm', p)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');

const plan = JSON.parse(process.argv[2] ?? '{}');
const report = { steps: [] };
const step = (name) => report.steps.push(name);

function parse(result) {
  const text = result?.content?.[0]?.text ?? '';
  try {
    return { isError: result.isError === true, json: JSON.parse(text) };
  } catch {
    return { isError: result.isError === true, text };
  }
}

const transport = new StdioClientTransport({
  command: plan.command[0],
  args: plan.command.slice(1),
  env: { PATH: process.env.PATH, CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? '' },
  stderr: 'pipe',
});
let stderr = '';
transport.stderr?.on('data', (c) => (stderr += c));
const client = new Client({ name: 'skill-mcp-deploy-test', version: '0.0.1' }, { capabilities: {} });
const deadline = setTimeout(() => {
  report.error = 'the session took longer than 120 s';
  report.stderr = stderr;
  console.log(JSON.stringify(report));
  process.exit(1);
}, 120_000);

// A failing step is recorded and the session goes on, so one missing feature does
// not hide the checks that follow it (the inspection above all).
async function attempt(name, fn) {
  try {
    await fn();
    step(name);
  } catch (e) {
    (report.stepErrors ??= {})[name] = String(e?.message ?? e);
  }
}
const call = async (name, args) => parse(await client.callTool({ name, arguments: args }));

try {
  await client.connect(transport);
  step('initialize');
  report.serverInfo = client.getServerVersion();
  await attempt('tools/list', async () => {
    report.tools = (await client.listTools()).tools.map((t) => t.name);
  });
  await attempt('skill_list', async () => (report.list = await call('skill_list', {})));
  if (plan.load) await attempt('skill_load', async () => (report.load = await call('skill_load', { name: plan.load })));
  if (plan.file) {
    await attempt('skill_file', async () => {
      report.file = await call('skill_file', { name: plan.file[0], paths: [plan.file[1]] });
    });
  }
  if (plan.run) {
    const args = { name: plan.run.name, script: plan.run.script, args: plan.run.args ?? [] };
    const given = plan.run.confirmToken;
    if (given === undefined) {
      await attempt('skill_run preview', async () => (report.preview = await call('skill_run', args)));
    }
    const token = given ?? report.preview?.json?.confirmToken;
    if (!plan.previewOnly && typeof token === 'string') {
      await attempt('skill_run confirmed', async () => {
        report.receipt = await call('skill_run', { ...args, confirmToken: token });
      });
    }
  }
  if (plan.inspect) {
    const r = spawnSync('/bin/sh', ['-c', plan.inspect], { encoding: 'utf8' });
    report.inspect = { status: r.status, stdout: r.stdout, stderr: r.stderr };
    step('inspect');
  }
  await client.close();
} catch (e) {
  report.error = String(e?.stack ?? e);
}
clearTimeout(deadline);
report.stderr = stderr;
console.log(JSON.stringify(report));
process.exit(report.error ? 1 : 0);
