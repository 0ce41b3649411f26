/**
 * Equality of two `bfe run` folders of one experiment that differ only in a setting that must
 * not change results — e.g. `adapter.kernel: js` (the reference loops) against the default
 * kernel. For every result file the two folders share (`results.json`, `per-query.jsonl`,
 * `k-sweep.json`, and per seed those plus `adapter.json` and `training.json`; `receipt.json`
 * holds timings and is skipped) it prints whether the bytes are identical, and for JSON files
 * that differ, how many numbers differ and the largest relative difference among them (so a
 * `training.json` whose step losses differ in their last bits reads `max rel. diff 2.6e-16`).
 * Exit 1 when a file is missing on one side or its structure (anything but a number) differs.
 *
 * pnpm bench:equal-runs <run-A> <run-B>
 */
import { readFile, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { benchCommand, parseCommand, runScript } from '../shared/cli.js';
import { out, printTable } from '../shared/table.js';

const SKIPPED = new Set(['receipt.json', 'report.html']);

async function resultFiles(dir: string, root = dir): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await resultFiles(path, root)));
    else if (!SKIPPED.has(entry.name)) files.push(relative(root, path));
  }
  return files.sort();
}

interface NumberDiff {
  compared: number;
  differing: number;
  maxRel: number;
  structural: string[];
}

/** Walks two parsed JSON values side by side, comparing numbers and anything else exactly. */
function walk(a: unknown, b: unknown, path: string, d: NumberDiff): void {
  if (typeof a === 'number' && typeof b === 'number') {
    d.compared++;
    if (a !== b) {
      d.differing++;
      const rel = Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b));
      d.maxRel = Math.max(d.maxRel, rel);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) walk(a[i], b[i], `${path}[${i}]`, d);
    return;
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    if (ka.join('\0') === kb.join('\0')) {
      const ra = a as Record<string, unknown>;
      const rb = b as Record<string, unknown>;
      for (const k of ka) walk(ra[k], rb[k], `${path}.${k}`, d);
      return;
    }
  }
  if (a !== b) d.structural.push(path || '(root)');
}

function parseAll(text: string, file: string): unknown {
  if (!file.endsWith('.jsonl')) return JSON.parse(text);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

const command = benchCommand(
  'bench:equal-runs',
  'byte and number equality of two bfe run folders of one experiment',
)
  .argument('<run-a>', 'a bfe run folder')
  .argument('<run-b>', 'the other')
  .option('--markdown', 'print the table as Markdown');

async function main(): Promise<void> {
  const {
    options,
    args: [a, b],
  } = parseCommand<{ markdown?: boolean }>(command);
  if (a === undefined || b === undefined) throw new Error('give two run folders: <run-A> <run-B>');
  const [filesA, filesB] = await Promise.all([resultFiles(a), resultFiles(b)]);
  const all = [...new Set([...filesA, ...filesB])].sort();
  let failed = false;
  const rows: string[][] = [];
  for (const file of all) {
    if (!filesA.includes(file) || !filesB.includes(file)) {
      rows.push([file, `only in ${filesA.includes(file) ? 'A' : 'B'}`, '', '']);
      failed = true;
      continue;
    }
    const [ta, tb] = await Promise.all([readFile(join(a, file)), readFile(join(b, file))]);
    if (ta.equals(tb)) {
      rows.push([file, 'byte-identical', '', '']);
      continue;
    }
    if (!/\.jsonl?$/.test(file)) {
      rows.push([file, 'differs (not JSON)', '', '']);
      failed = true;
      continue;
    }
    const d: NumberDiff = { compared: 0, differing: 0, maxRel: 0, structural: [] };
    walk(parseAll(ta.toString('utf8'), file), parseAll(tb.toString('utf8'), file), '', d);
    if (d.structural.length > 0) failed = true;
    rows.push([
      file,
      d.structural.length > 0
        ? `differs at ${d.structural.slice(0, 3).join(', ')}`
        : 'numbers differ',
      `${d.differing} of ${d.compared}`,
      d.maxRel.toExponential(1),
    ]);
  }
  out(`A = ${a}`);
  out(`B = ${b}`);
  printTable(
    {
      head: ['file', 'A vs B', 'numbers differing', 'max rel. diff'],
      align: ['left', 'left', 'right', 'right'],
      rows,
    },
    { markdown: options.markdown },
  );
  if (failed) process.exitCode = 1;
}

await runScript('bench:equal-runs', main);
