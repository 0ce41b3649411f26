import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { readExperiment } from '../apps/runner/src/experiment/config.ts';
import { repoRoot } from './helpers.ts';

/** Runs tools/check-benchmarks.mjs on a document (default: the real BENCHMARKS.md). */
function check(file?: string): { code: number | null; stdout: string; stderr: string } {
  const args = [
    join(repoRoot, 'tools/check-benchmarks.mjs'),
    ...(file === undefined ? [] : [file]),
  ];
  const r = spawnSync(process.execPath, args, { cwd: repoRoot, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Writes a document into a fresh temporary folder and checks it. */
function checkText(lines: readonly string[]) {
  const file = join(tmpDir('bfe-check-benchmarks-'), 'BENCHMARKS.md');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return check(file);
}

const table = ['| system | R@10 |', '| ------ | ---: |', '| pooled | 0.30 |'];
const fence = (...commands: string[]) => ['', '```sh', ...commands, '```'];

describe('tools/check-benchmarks.mjs', () => {
  it('passes a table whose block names a committed experiment, script and bfe command', () => {
    const r = checkText([
      '# Benchmarks',
      '',
      ...table,
      ...fence(
        'BFE_DATA_MIRROR=../shared/data pnpm bfe run configs/experiments/locomo-minilm.yaml',
        'pnpm bfe eval --per-query <run>/per-query.jsonl --base pooled',
        'pnpm bench:scorer --sizes 100000   # a root script',
        'pnpm bfe data split locomo --seed 42',
      ),
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('fails on a row whose experiment file is not in the repository, naming the line', () => {
    const r = checkText([
      '# Benchmarks',
      '',
      ...table,
      ...fence('pnpm bfe run configs/experiments/covidqa-minilm-t999.yaml'),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('BENCHMARKS.md:8:');
    expect(r.stderr).toContain('configs/experiments/covidqa-minilm-t999.yaml does not exist');
  });

  it('fails on a table without commands before the next heading', () => {
    const r = checkText(['# Benchmarks', '', ...table, '', '## Next', '', 'prose']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('BENCHMARKS.md:3: table without a ```sh block');
  });

  it('fails on an unknown script, an unknown bfe command, a missing python file and a scratch path', () => {
    const r = checkText([
      '# Benchmarks',
      '',
      ...table,
      ...fence(
        'pnpm bench:nothing-here',
        'pnpm bfe frobnicate --all',
        'pnpm bfe data frob locomo',
        'python3 cmp_runs.py a b',
        'nice -n 10 pnpm bfe run /work/scratch/x.yaml',
      ),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('BENCHMARKS.md:8: pnpm bench:nothing-here: no such script');
    expect(r.stderr).toContain('BENCHMARKS.md:9: `bfe frobnicate` is not a bfe command');
    expect(r.stderr).toContain('BENCHMARKS.md:10: `bfe data frob` is not a bfe command');
    expect(r.stderr).toContain('BENCHMARKS.md:11: cmp_runs.py does not exist');
    expect(r.stderr).toContain('BENCHMARKS.md:12: an absolute /work/ path');
  });

  it('passes the real BENCHMARKS.md', () => {
    const r = check();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('every experiment file BENCHMARKS.md runs is a valid experiment', async () => {
    const text = readFileSync(join(repoRoot, 'BENCHMARKS.md'), 'utf8');
    const files = [
      ...new Set([...text.matchAll(/bfe run (configs\/\S+\.yaml)/g)].map((m) => m[1]!)),
    ];
    expect(files.length).toBeGreaterThan(30);
    for (const f of files) {
      const experiment = await readExperiment(join(repoRoot, f));
      expect(experiment.name).toMatch(/^[a-z0-9]/);
    }
  });
});
