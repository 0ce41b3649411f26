import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  documentTask,
  freshDir,
  readJsonFile,
  useTinyModel,
  writeExperiment,
} from './fixtures/run/setup.ts';
import { runBfe } from './helpers.ts';

// Bad input and a full disk through `bfe run` (issue 12): every load problem counted where
// people read results, bad bytes and empty datasets refused by name, storage faults typed.

const tiny = useTinyModel();

function task(dir: string, edit: (root: string) => void): string {
  const root = join(dir, 'base');
  cpSync(documentTask, root, { recursive: true });
  edit(root);
  return root;
}

function experiment(dir: string, folder: string, extra: Record<string, unknown> = {}): string {
  return writeExperiment(dir, 'x.yaml', {
    name: 'bad-input',
    dataset: { name: `lmeb:${folder}` },
    split: { policy: 'none' },
    model: { name: 'tiny' },
    scorer: { k: 4, kSweep: [2, 4] },
    eval: { resamples: 100 },
    ...extra,
  });
}

async function run(dir: string, file: string, env: Record<string, string | undefined> = {}) {
  return runBfe(['run', file, '--cache-dir', join(dir, 'cache'), '--runs-dir', join(dir, 'runs')], {
    ...tiny.env(),
    ...env,
  });
}

/** Files left in the cache's work folder and run folders (a failed run leaves none). */
function leftovers(dir: string): string[] {
  const tmp = join(dir, 'cache', 'tmp');
  const runs = join(dir, 'runs', 'bad-input');
  return [
    ...(existsSync(tmp) ? readdirSync(tmp) : []),
    ...(existsSync(runs) ? readdirSync(runs) : []),
  ];
}

describe('bfe run: load problems are counted, never hidden', () => {
  it('a malformed line and a duplicate id show in results.json, report.md and the terminal', async () => {
    const dir = freshDir(tiny.root(), 'load');
    const base = task(dir, (root) => {
      const corpus = join(root, 'corpus.jsonl');
      const first = readFileSync(corpus, 'utf8').split('\n')[0]!;
      writeFileSync(corpus, `${readFileSync(corpus, 'utf8')}{"id": broken\n${first}\n`);
    });
    const clean = freshDir(tiny.root(), 'clean');
    const r0 = await run(clean, experiment(clean, documentTask));
    const r = await run(dir, experiment(dir, base));
    expect(r0.code).toBe(0);
    expect(r.code).toBe(0);
    const runDir = join(
      dir,
      'runs',
      'bad-input',
      readdirSync(join(dir, 'runs', 'bad-input')).find((f) => f !== 'latest.json')!,
    );
    const cleanRun = join(
      clean,
      'runs',
      'bad-input',
      readdirSync(join(clean, 'runs', 'bad-input')).find((f) => f !== 'latest.json')!,
    );
    type Load = { dropped: number; reasons: { dropped: Record<string, number> } };
    const load = readJsonFile<{ load: Load }>(join(runDir, 'results.json')).load;
    const before = readJsonFile<{ load: Load }>(join(cleanRun, 'results.json')).load;
    expect(load.dropped - before.dropped).toBe(2);
    expect(load.reasons.dropped['invalid-record']).toBe(
      (before.reasons.dropped['invalid-record'] ?? 0) + 1,
    );
    expect(load.reasons.dropped['duplicate-memory-id']).toBe(1);
    expect(readFileSync(join(runDir, 'report.md'), 'utf8')).toContain(
      `**loading:** ${load.dropped} dropped (`,
    );
    expect(r.stdout).toContain(`loading: ${load.dropped} dropped (`);
    expect(r.stdout).toContain('1 duplicate-memory-id');
  });

  it('refuses non-UTF-8 bytes by file, offset and line (exit 2)', async () => {
    const dir = freshDir(tiny.root(), 'utf8');
    const base = task(dir, (root) => {
      writeFileSync(
        join(root, 'corpus.jsonl'),
        Buffer.concat([
          readFileSync(join(root, 'corpus.jsonl')),
          Buffer.from('{"id":"px","text":"caf\xe9"}\n', 'latin1'),
        ]),
      );
    });
    const r = await run(dir, experiment(dir, base));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /DATA_INVALID: .*base\/corpus\.jsonl: not valid UTF-8: byte 0xe9 at byte offset \d+ \(line \d+\)/,
    );
    expect(r.stderr).not.toContain('    at ');
    expect(leftovers(dir)).toEqual([]);
  });

  it('an empty dataset is DATASET_EMPTY naming the files, not a split error', async () => {
    const dir = freshDir(tiny.root(), 'empty');
    const base = task(dir, (root) => writeFileSync(join(root, 'queries.jsonl'), ''));
    const r = await run(dir, experiment(dir, base, { split: { policy: 'connected-bank' } }));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATASET_EMPTY');
    expect(r.stderr).toContain(join(base, 'queries.jsonl'));
    expect(r.stderr).not.toContain('SPLIT_IMPOSSIBLE');
  });

  it('bad ratios and a mistyped dataset option stop the run before any stage', async () => {
    const dir = freshDir(tiny.root(), 'early');
    const ratios = experiment(dir, documentTask, {
      split: { policy: 'connected-bank', ratios: [0.5, 0.2, 0.2] },
    });
    const r = await run(dir, ratios);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(ratios);
    expect(r.stderr).toContain('→ at split.ratios');
    const option = writeExperiment(dir, 'y.yaml', {
      name: 'y',
      dataset: { name: `lmeb:${documentTask}`, options: { layuot: 'document' } },
      model: { name: 'tiny' },
    });
    const o = await run(dir, option);
    expect(o.code).toBe(2);
    expect(o.stderr).toContain(option);
    expect(o.stderr).toContain('→ at dataset.options');
    expect(existsSync(join(dir, 'cache'))).toBe(false);
  });
});

describe('bfe run: a full disk is a typed error and leaves nothing partial', () => {
  it('STORAGE_FULL through the BFE_FAULT_ENOSPC failpoint (exit 2, no stack; --debug adds it)', async () => {
    const dir = freshDir(tiny.root(), 'enospc');
    const file = experiment(dir, documentTask);
    const r = await run(dir, file, { BFE_FAULT_ENOSPC: 'per-query.jsonl' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /bfe: STORAGE_FULL: no space left on the device \(ENOSPC\) writing \S+per-query\.jsonl/,
    );
    expect(r.stderr).not.toContain('    at ');
    expect(leftovers(dir)).toEqual([]);
    const d = await runBfe(
      ['run', file, '--cache-dir', join(dir, 'cache'), '--runs-dir', join(dir, 'runs'), '--debug'],
      { ...tiny.env(), BFE_FAULT_ENOSPC: 'per-query.jsonl' },
    );
    expect(d.code).toBe(2);
    expect(d.stderr).toContain('    at ');
  });

  // A real full file system: a 1 MiB tmpfs, filled but for 12 KiB, mounted in a mount namespace
  // of its own (`unshare`, inside a user namespace, so no privilege is needed) that only the bfe
  // process sees: the same test as root and as an ordinary user, and nothing stays mounted.
  it('STORAGE_FULL on a real full tmpfs (root or not: unshare --user --mount)', async () => {
    const dir = freshDir(tiny.root(), 'tmpfs');
    const mnt = join(dir, 'mnt');
    mkdirSync(mnt);
    // $1 is node: it fills the mount, then runs bfe; what bfe left in the cache's work folder
    // is listed before the namespace, and the tmpfs with it, goes away.
    const script = `mount -t tmpfs -o size=1m tmpfs "$MNT" || exit 90
"$1" -e 'const fs = require("node:fs"); const m = process.argv[1]; const s = fs.statfsSync(m);
fs.writeFileSync(m + "/filler", Buffer.alloc(Number(s.bavail) * Number(s.bsize) - 12 * 1024));' "$MNT" || exit 91
"$@"; code=$?
ls -A "$MNT/cache/tmp" > "$MNT.left" || exit 92
exit $code`;
    const r = await runBfe(
      [
        'run',
        experiment(dir, documentTask),
        '--cache-dir',
        join(mnt, 'cache'),
        '--runs-dir',
        join(dir, 'runs'),
      ],
      { ...tiny.env(), MNT: mnt },
      ['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh'],
    );
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /bfe: STORAGE_FULL: no space left on the device \(ENOSPC\) writing \/\S+/,
    );
    expect(r.stderr).not.toContain('internal error');
    expect(readFileSync(`${mnt}.left`, 'utf8')).toBe('');
    expect(existsSync(join(dir, 'runs'))).toBe(false);
    // The tmpfs was the namespace's alone: here the folder is as it was made.
    expect(readdirSync(mnt)).toEqual([]);
  });
});
