#!/usr/bin/env node
// `pnpm test:loaded [--runs N] [--loops K] [vitest filters]`: the whole test suite
// (tools/run-tests.mjs, as `npm test` runs it after its check) N times in a row (default 3) while
// K busy loops (default 2, one per core here) hold the CPU, to show that no test depends on a
// quiet machine. Each run's output goes to test-results/loaded-<i>.log; one line per run, then
// the plain line CI reads, summed. Exit 1 when any run failed.
import { spawn, spawnSync } from 'node:child_process';
import { openSync, closeSync, mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: 'string', default: '3' }, loops: { type: 'string', default: '2' } },
});
const runs = Number(values.runs);
const loops = Number(values.loops);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(loops) || loops < 0) {
  console.error('test:loaded: --runs must be an integer ≥ 1 and --loops an integer ≥ 0');
  process.exit(2);
}

// The tests' one-time needs first (as `npm test` does), outside the timed runs.
for (const tool of ['ensure-model.mjs', 'ensure-milvus.mjs']) {
  const r = spawnSync(process.execPath, [join(root, 'tools', tool)], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const busy = Array.from({ length: loops }, () =>
  spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }),
);
const stopBusy = () => {
  for (const b of busy) b.kill('SIGKILL');
};
process.once('exit', stopBusy);
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

mkdirSync(join(root, 'test-results'), { recursive: true });
const total = { passed: 0, failed: 0, skipped: 0 };
let anyFailed = false;
for (let i = 1; i <= runs; i++) {
  const log = join(root, 'test-results', `loaded-${i}.log`);
  const fd = openSync(log, 'w');
  const started = performance.now();
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'tools', 'run-tests.mjs'), ...positionals], {
      cwd: root,
      stdio: ['ignore', fd, fd],
    });
    child.once('exit', (c) => resolve(c ?? 1));
  });
  closeSync(fd);
  const seconds = (performance.now() - started) / 1000;
  const line = readFileSync(log, 'utf8')
    .split('\n')
    .findLast((l) => /^\d+ passed, \d+ failed/.test(l));
  const [passed, failed, skipped] = (line?.match(/\d+/g) ?? ['0', '1', '0']).map(Number);
  total.passed += passed;
  total.failed += failed;
  total.skipped += skipped ?? 0;
  if (code !== 0 || line === undefined) anyFailed = true;
  console.log(
    `run ${i} of ${runs} with ${loops} busy loops: exit ${code}, ${seconds.toFixed(0)} s, load average ${loadavg()[0].toFixed(1)}: ${line ?? 'no summary line'} (${log})`,
  );
}
stopBusy();
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(anyFailed || total.failed > 0 ? 1 : 0);
