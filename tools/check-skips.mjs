#!/usr/bin/env node
// Every test that can skip is listed in the README ("## Tests that can skip": its file, the
// suite or test, when it skips, and what makes it run instead). Two checks against that list:
//
// - the sources (default): every skip site in a test file (`describe|it|test|suite` `.skip`,
//   `.skipIf`, `.runIf`, `.todo`; `ctx.skip()`) has a row, every row's file has as many skip
//   sites as rows and contains the row's title; an unlisted skip, or a row whose skip is gone,
//   is an error;
// - a run (`--report <vitest.json>`, vitest's JSON reporter): a skipped test is an error when
//   its file has no row, or when every row of its file is required in this environment (each
//   of its conditions holds: `NAME=1` set, `NAME` unset, Linux) — CI sets them all, so there a
//   skip is a failure.
//
// Usage: node tools/check-skips.mjs [--root DIR] [--report FILE]
// Exit 1 with one line per problem.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
};
const root = resolve(option('--root') ?? fileURLToPath(new URL('..', import.meta.url)));
const report = option('--report');
const HEADING = '## Tests that can skip';
const SITE =
  /\b(?:describe|it|test|suite)\s*\.\s*(?:skip|skipIf|runIf|todo)\b|\b(?:ctx|context|task)\.skip\s*\(/g;
const TEST_FILE = /\.test\.(?:ts|mts|js|mjs)$/;

/** The README's rows: file, title, and the conditions under which the test must run. */
function readRows() {
  const text = readFileSync(join(root, 'README.md'), 'utf8');
  const start = text.indexOf(`\n${HEADING}\n`);
  if (start === -1) return { rows: [], problems: [`README.md: no "${HEADING}" section`] };
  const end = text.indexOf('\n## ', start + HEADING.length + 2);
  const lines = text.slice(start, end === -1 ? undefined : end).split('\n');
  const rows = [];
  const problems = [];
  for (const line of lines) {
    const cells = line.split('|').map((c) => c.trim());
    const file = /^`([^`]+\.test\.[a-z]+)`$/.exec(cells[1] ?? '')?.[1];
    if (file === undefined) continue;
    const title = (cells[2] ?? '').replaceAll('`', '');
    const requires = [];
    const runs = cells[4] ?? '';
    for (const m of runs.matchAll(/`([A-Z][A-Z0-9_]*)=1`/g)) requires.push({ set: m[1] });
    for (const m of runs.matchAll(/`([A-Z][A-Z0-9_]*)` unset/g)) requires.push({ unset: m[1] });
    if (/\bLinux\b/.test(runs)) requires.push({ platform: 'linux' });
    if (requires.length === 0) problems.push(`README.md: ${file}: no condition it runs under`);
    rows.push({ file, title, requires });
  }
  return { rows, problems };
}

/** Test files under the root (node_modules, dist and hidden folders left out), relative. */
function testFiles(dir = root, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules' || entry.name === 'dist')
      continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) testFiles(path, out);
    else if (TEST_FILE.test(entry.name)) out.push(relative(root, path).split(sep).join('/'));
  }
  return out;
}

function checkSources(rows) {
  const problems = [];
  const byFile = new Map();
  for (const row of rows) byFile.set(row.file, [...(byFile.get(row.file) ?? []), row]);
  const files = testFiles();
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const sites = [...text.matchAll(SITE)].map((m) => text.slice(0, m.index).split('\n').length);
    const listed = byFile.get(file) ?? [];
    if (sites.length !== listed.length) {
      problems.push(
        `${file}: ${sites.length} skip site(s) (line ${sites.join(', ') || '–'}), ${listed.length} row(s) in README.md "${HEADING}"`,
      );
    }
    for (const row of listed) {
      if (!text.includes(row.title))
        problems.push(`README.md: ${file}: no test or suite titled "${row.title}"`);
    }
  }
  for (const file of byFile.keys()) {
    if (!files.includes(file)) problems.push(`README.md: ${file} does not exist`);
  }
  return problems;
}

/** Whether every condition of a row holds here: the test must then run. */
function requiredHere(row) {
  return row.requires.every((r) =>
    r.set !== undefined
      ? process.env[r.set] === '1'
      : r.unset !== undefined
        ? process.env[r.unset] !== '1'
        : process.platform === r.platform,
  );
}

function checkRun(rows, file) {
  const problems = [];
  const results = JSON.parse(readFileSync(file, 'utf8')).testResults ?? [];
  for (const result of results) {
    const path = relative(root, result.name).split(sep).join('/');
    const listed = rows.filter((r) => r.file === path);
    for (const test of result.assertionResults ?? []) {
      if (!['skipped', 'pending', 'todo'].includes(test.status)) continue;
      if (listed.length === 0) {
        problems.push(`${path}: "${test.fullName}" skipped, and README.md does not list it`);
      } else if (listed.every(requiredHere)) {
        const needs = listed.flatMap((r) =>
          r.requires.map((q) => (q.set ? `${q.set}=1` : q.unset ? `${q.unset} unset` : 'Linux')),
        );
        problems.push(
          `${path}: "${test.fullName}" skipped, though it must run here (${[...new Set(needs)].join(', ')})`,
        );
      }
    }
  }
  return problems;
}

const { rows, problems } = readRows();
problems.push(...(report === undefined ? checkSources(rows) : checkRun(rows, report)));
if (problems.length > 0) {
  console.error(`Skips not as README.md lists them:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(
  report === undefined
    ? `${rows.length} skippable tests, each listed in README.md`
    : 'no test skipped that README.md does not allow here',
);
