#!/usr/bin/env node
// Runs every vitest project once and ends with the plain line CI reads:
// `N passed, N failed, N skipped`. The exit code is vitest's, else 1 when a test skipped that
// README.md's list of skips does not allow here (tools/check-skips.mjs --report).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = join(root, 'test-results');
const out = join(outDir, 'vitest.json');
mkdirSync(outDir, { recursive: true });
rmSync(out, { force: true });

// BFE_REQUIRE_DATA=1 (CI): a missing mirror is this one failure, naming it, before any test.
if (process.env.BFE_REQUIRE_DATA === '1') {
  const mirror = process.env.BFE_DATA_MIRROR ? resolve(root, process.env.BFE_DATA_MIRROR) : '';
  if (mirror === '' || !existsSync(mirror)) {
    console.error(
      `BFE_REQUIRE_DATA=1 but the benchmark mirror ${mirror || '(BFE_DATA_MIRROR unset)'} does not exist: the real-data tests cannot run.`,
    );
    process.exit(1);
  }
  console.log(`data mirror required: ${mirror}`);
} else if (!process.env.BFE_DATA_MIRROR) {
  console.log(
    'note: BFE_DATA_MIRROR is not set: the tests that read the real benchmark files are skipped (and counted as skipped).',
  );
}

const r = spawnSync(
  join(root, 'node_modules', '.bin', 'vitest'),
  [
    'run',
    '--config',
    'configs/vitest.config.ts',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${out}`,
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: 'inherit', env: process.env },
);

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const report = JSON.parse(readFileSync(out, 'utf8'));
  passed = report.numPassedTests;
  // A failed test counts once; a file that failed with no failed test (it did not load, or a hook
  // failed) counts once more. Failed describe blocks around a failed test are not extra failures.
  const fileFailures = (report.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
  failed = report.numFailedTests + fileFailures;
  skipped = report.numPendingTests + (report.numTodoTests ?? 0);
} catch {
  failed = Math.max(1, failed);
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
// A skipped test must be listed in the README, and not skip where its row's variables are set.
const skips = spawnSync(process.execPath, [join(root, 'tools/check-skips.mjs'), '--report', out], {
  cwd: root,
  stdio: 'inherit',
});
const code = r.status ?? 1;
process.exit(code !== 0 ? code : (skips.status ?? 1));
