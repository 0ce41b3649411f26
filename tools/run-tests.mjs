#!/usr/bin/env node
// Runs every vitest project once and ends with the plain line CI reads:
// `N passed, N failed, N skipped`. The exit code is vitest's.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = join(root, 'test-results');
const out = join(outDir, 'vitest.json');
mkdirSync(outDir, { recursive: true });
rmSync(out, { force: true });

if (!process.env.BFE_DATA_MIRROR) {
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
  failed = report.numFailedTests + (report.numFailedTestSuites ?? 0);
  skipped = report.numPendingTests + (report.numTodoTests ?? 0);
} catch {
  failed = Math.max(1, failed);
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(r.status ?? 1);
