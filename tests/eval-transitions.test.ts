import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { resultsSchema } from '@bfe/eval';
import { runBfe } from './helpers.ts';

// A hand-made per-query file: the rank (1-based) of the one relevant memory 'r' per system,
// null when it is not ranked at all. A hit is a relevant memory in the top 10.
const RANKS: [string, string, number | null, number | null, number | null][] = [
  // query, subtask, pooled, sparse-fusion, adapted
  ['q1', 'single-hop', 11, 1, 2],
  ['q2', 'single-hop', 3, 12, 10],
  ['q3', 'single-hop', null, null, 5],
  ['q4', 'multi-hop', 1, 1, 11],
  ['q5', 'multi-hop', 10, 4, 1],
  ['q7', 'multi-hop', null, 11, null],
];
const SYSTEMS = ['pooled', 'sparse-fusion', 'adapted'];

function writeFixture(dir: string): string {
  const fillers = Array.from({ length: 12 }, (_, i) => `f${i}`);
  const lines: string[] = [];
  for (const [s, system] of SYSTEMS.entries()) {
    for (const row of RANKS) {
      const rank = row[2 + s] as number | null;
      const ranked = [...fillers];
      if (rank !== null) ranked.splice(rank - 1, 0, 'r');
      lines.push(
        JSON.stringify({ system, queryId: row[0], subtask: row[1], ranked, relevant: ['r'] }),
      );
    }
    // A query without a relevant memory: dropped, never counted.
    lines.push(
      JSON.stringify({
        system,
        queryId: 'q6',
        subtask: 'multi-hop',
        ranked: fillers,
        relevant: [],
      }),
    );
  }
  const file = join(dir, 'per-query.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const counts = (
  n: number,
  recoveries: number,
  reverse: number,
  bothHit: number,
  bothMiss: number,
) => ({
  nQueries: n,
  recoveries,
  reverse,
  bothHit,
  bothMiss,
  net: recoveries - reverse,
});

// Worked out by hand from RANKS.
const WANT = [
  {
    from: 'pooled',
    to: 'sparse-fusion',
    overall: counts(6, 1, 1, 2, 2),
    subtasks: [
      { subtask: 'single-hop', ...counts(3, 1, 1, 0, 1) },
      { subtask: 'multi-hop', ...counts(3, 0, 0, 2, 1) },
    ],
  },
  {
    from: 'pooled',
    to: 'adapted',
    overall: counts(6, 2, 1, 2, 1),
    subtasks: [
      { subtask: 'single-hop', ...counts(3, 2, 0, 1, 0) },
      { subtask: 'multi-hop', ...counts(3, 0, 1, 1, 1) },
    ],
  },
  {
    from: 'sparse-fusion',
    to: 'adapted',
    overall: counts(6, 2, 1, 2, 1),
    subtasks: [
      { subtask: 'single-hop', ...counts(3, 2, 0, 1, 0) },
      { subtask: 'multi-hop', ...counts(3, 0, 1, 1, 1) },
    ],
  },
];

describe('bfe eval --transitions on a hand-made per-query file', () => {
  it('prints recoveries, reverse, net, both hit and both miss per subtask; --json holds them', async () => {
    const dir = tmpDir('bfe-transitions-');
    const file = writeFixture(dir);
    const args = [
      'eval',
      '--per-query',
      file,
      '--subtasks',
      'single-hop,multi-hop',
      '--resamples',
      '50',
    ];
    const asJson = await runBfe(
      [
        ...args,
        '--transitions',
        'pooled,sparse-fusion',
        '--transitions',
        'pooled,adapted;sparse-fusion,adapted',
        '--json',
      ],
      {},
    );
    expect(asJson.code, asJson.stderr).toBe(0);
    const out = JSON.parse(asJson.stdout) as { transitions: unknown[]; results: unknown };
    expect(out.transitions).toEqual(
      WANT.map((w) => ({ ...w, k: 10, hit: 'at least one relevant memory in the top k' })),
    );
    // The results carry the predeclared pairs whatever was asked.
    const results = resultsSchema.parse(out.results);
    expect(results.transitions?.map((t) => `${t.from}>${t.to}`)).toEqual([
      'pooled>sparse-fusion',
      'pooled>adapted',
      'sparse-fusion>adapted',
    ]);

    const text = await runBfe([...args, '--transitions', 'pooled,adapted'], {});
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('pooled → adapted: queries with a relevant memory in the top 10');
    expect(text.stdout).not.toContain('pooled → sparse-fusion:');
    expect(text.stdout).toMatch(
      /subtask\s+queries\s+recoveries\s+reverse\s+net\s+both hit\s+both miss/,
    );
    expect(text.stdout).toMatch(/single-hop\s+3\s+2\s+0\s+\+2\s+1\s+0\n/);
    expect(text.stdout).toMatch(/multi-hop\s+3\s+0\s+1\s+−1\s+1\s+1\n/);
    expect(text.stdout).toMatch(/all\s+6\s+2\s+1\s+\+1\s+2\s+1/);
  }, 60_000);

  it('checks a results file’s transitions and refuses a pair naming no system', async () => {
    const dir = tmpDir('bfe-transitions-');
    const file = writeFixture(dir);
    const args = [
      'eval',
      '--per-query',
      file,
      '--subtasks',
      'single-hop,multi-hop',
      '--resamples',
      '50',
    ];
    const first = await runBfe([...args, '--json'], {});
    expect(first.code, first.stderr).toBe(0);
    const results = (
      JSON.parse(first.stdout) as {
        results: { transitions: { overall: { bothHit: number; bothMiss: number } }[] };
      }
    ).results;
    const good = join(dir, 'results.json');
    // Another key order is the same file.
    const reordered = results.transitions.map((t) =>
      Object.fromEntries(Object.entries(t).reverse()),
    );
    writeFileSync(good, JSON.stringify({ ...results, transitions: reordered }));
    const same = await runBfe([...args, '--results', good], {});
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain(`every figure equals ${good}`);
    // One query moved from both miss to both hit: still a valid file, but not these queries'.
    const o = results.transitions[0]!.overall;
    o.bothHit += 1;
    o.bothMiss -= 1;
    const bad = join(dir, 'altered.json');
    writeFileSync(bad, JSON.stringify(results));
    expect(resultsSchema.safeParse(JSON.parse(readFileSync(bad, 'utf8'))).success).toBe(false);
    const sub = results.transitions[0] as unknown as {
      subtasks: { bothHit: number; bothMiss: number }[];
    };
    sub.subtasks[1]!.bothHit += 1;
    sub.subtasks[1]!.bothMiss -= 1;
    writeFileSync(bad, JSON.stringify(results));
    const differs = await runBfe([...args, '--results', bad], {});
    expect(differs.code).not.toBe(0);
    expect(differs.stderr).toContain('transitions pooled → sparse-fusion');

    const missing = await runBfe([...args, '--transitions', 'pooled,hybrid'], {});
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("'hybrid'");
  }, 60_000);
});
