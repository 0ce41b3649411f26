#!/usr/bin/env node
// `pnpm test:changed`: every package's tests as its own turbo task, cached per package. A
// package's `test` task depends on its `transit` node, which depends on its workspace
// dependencies' `transit` nodes (turbo.json), so a change in one package reruns the tests of that
// package and of the packages that depend on it; every other package's result is replayed from
// the cache with its report (`test-results/vitest.json`, the task's output). Arguments go to
// turbo (`--filter`, `--force`, …). Ends with the plain line CI reads, summed over every
// package that took part, and says which packages ran and which were replayed.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Workspace package folders with a `test` script. */
function testedPackages() {
  const dirs = ['packages', 'apps']
    .flatMap((top) => readdirSync(join(root, top)).map((d) => join(top, d)))
    .concat(['tests']);
  return dirs.filter((dir) => {
    const file = join(root, dir, 'package.json');
    if (!existsSync(file)) return false;
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    return typeof pkg.scripts?.test === 'string';
  });
}

const packages = testedPackages();
// A report left by an earlier run must not be counted: turbo restores it for a cache hit.
for (const dir of packages)
  rmSync(join(root, dir, 'test-results'), { recursive: true, force: true });

const runsDir = join(root, '.turbo', 'runs');
const started = Date.now();
const r = spawnSync(
  process.execPath,
  [
    join(root, 'tools', 'turbo.mjs'),
    'run',
    'test',
    '--continue',
    '--summarize',
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: 'inherit', env: process.env },
);

/** Task id → cache status of this run, from turbo's run summary (`--summarize`). */
function taskStatus() {
  if (!existsSync(runsDir)) return [];
  const newest = readdirSync(runsDir)
    .map((f) => join(runsDir, f))
    .filter((f) => statSync(f).mtimeMs >= started - 1000)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (newest === undefined) return [];
  const summary = JSON.parse(readFileSync(newest, 'utf8'));
  return (summary.tasks ?? [])
    .filter((t) => t.task === 'test')
    .map((t) => ({ pkg: t.package, status: t.cache?.status === 'HIT' ? 'cached' : 'ran' }));
}

let passed = 0;
let failed = 0;
let skipped = 0;
let reports = 0;
for (const dir of packages) {
  const file = join(root, dir, 'test-results', 'vitest.json');
  if (!existsSync(file)) continue;
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    passed += report.numPassedTests;
    failed += report.numFailedTests + (report.numFailedTestSuites ?? 0);
    skipped += report.numPendingTests + (report.numTodoTests ?? 0);
    reports += 1;
  } catch {
    failed += 1;
  }
}
const tasks = taskStatus();
const ran = tasks.filter((t) => t.status === 'ran').map((t) => t.pkg);
const cached = tasks.filter((t) => t.status === 'cached').map((t) => t.pkg);
console.log(`test tasks ran (${ran.length}): ${ran.join(', ') || '-'}`);
console.log(`test tasks replayed from the cache (${cached.length}): ${cached.join(', ') || '-'}`);
if (r.status !== 0 && failed === 0) failed = 1;
if (reports === 0 && r.status === 0) console.log('no package reported tests');
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(r.status ?? 1);
