// A node:test reporter that writes FLAT TAP 13: one "ok"/"not ok" line per test case,
// named "suite > case". meson 1.0's TAP parser rejects the indented subtest blocks of
// node's built-in TAP reporter, so meson gets this instead and counts every case.
// Failure details go on "#" lines, which TAP readers show and never parse as results, and
// to stderr as well: `meson test --print-errorlogs` shows a TAP test's stderr, not its
// stdout, and a CI log must say which assertion failed.
import { inspect } from 'node:util';

function comment(text) {
  return String(text)
    .split('\n')
    .map((line) => `# ${line}`)
    .join('\n');
}

function describeError(error) {
  if (!error) return '';
  const cause = error.cause ?? error;
  if (cause instanceof Error) return cause.stack ?? cause.message;
  return inspect(cause, { depth: 4 });
}

export default async function* flatTap(source) {
  yield 'TAP version 13\n';
  let count = 0;
  const path = [];
  const counts = { pass: 0, fail: 0, skipped: 0 };
  for await (const event of source) {
    const data = event.data ?? {};
    switch (event.type) {
      case 'test:start':
        path.length = data.nesting;
        path[data.nesting] = data.name;
        break;
      case 'test:pass':
      case 'test:fail': {
        const isSuite = data.details?.type === 'suite';
        const failed = event.type === 'test:fail';
        path.length = data.nesting;
        const name = [...path, data.name].join(' > ').replace(/#/g, '\\#');
        // A suite's verdict is its cases' verdicts, except when the suite itself broke
        // (a hook threw, the file did not load): then it is reported as one failure.
        if (isSuite && !(failed && data.details?.error?.failureType !== 'subtestsFailed')) break;
        count += 1;
        if (failed) {
          counts.fail += 1;
          const why = describeError(data.details?.error);
          yield `not ok ${count} - ${name}\n`;
          yield `${comment(why)}\n`;
          process.stderr.write(`FAILED: ${name}\n${why}\n\n`);
        } else if (data.skip !== undefined) {
          counts.skipped += 1;
          yield `ok ${count} - ${name} # SKIP ${typeof data.skip === 'string' ? data.skip : ''}\n`;
        } else {
          counts.pass += 1;
          yield `ok ${count} - ${name}\n`;
        }
        break;
      }
      case 'test:stderr':
      case 'test:stdout':
        if (data.message) yield `${comment(data.message.replace(/\n$/, ''))}\n`;
        break;
      default:
        break;
    }
  }
  yield `1..${count}\n`;
  yield `# tests ${count}\n# pass ${counts.pass}\n# fail ${counts.fail}\n# skipped ${counts.skipped}\n`;
}
