import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RelevanceLabels, type Benchmark, type Memory, type Query } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import type { OpenedBank } from '@bfe/encoder';
import { resultsSchema } from '@bfe/eval';
import { tiesMetaSchema } from './ties.js';
import { scoreAndWrite } from './write.js';

const DIM = 8;

function unit(random: () => number): number[] {
  const v = Array.from({ length: DIM }, () => random() * 2 - 1);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

interface Row {
  readonly id: string;
  readonly bankId?: string;
  /** Content token vectors. */
  readonly tokens: number[][];
  readonly pooled: number[];
}

/**
 * A benchmark in file order — two conversations of 12 turns, where turns 3–5 of each are
 * exact copies (text and vectors) and one copy is the relevant memory, so ties decide
 * metrics — with its bank rows, adapted query tokens and labels.
 */
function fixture() {
  const random = rng(7);
  const memories: Memory[] = [];
  const memoryRows: Row[] = [];
  const words = ['cat', 'dog', 'sun', 'rain', 'tree', 'boat', 'moon', 'lake'];
  for (const conv of ['conv-1', 'conv-2']) {
    let copy: Row | undefined;
    for (let t = 0; t < 12; t++) {
      const id = `${conv}:D1:${t}`;
      const duplicate = t >= 3 && t <= 5;
      const text = duplicate ? 'the same words' : `${words[t % 8]} ${words[(t * 3) % 8]}`;
      memories.push({ id, bankId: conv, text, meta: {} });
      const own = { id, tokens: [1, 2, 3].map(() => unit(random)), pooled: unit(random) };
      if (duplicate && copy === undefined) copy = own;
      const vectors = duplicate ? copy! : own;
      memoryRows.push({ id, bankId: conv, tokens: vectors.tokens, pooled: vectors.pooled });
    }
  }
  const queries: Query[] = [];
  const queryRows: Row[] = [];
  const adapted = new Map<string, number[][]>();
  const labels = new RelevanceLabels();
  for (let i = 0; i < 8; i++) {
    const id = `q${i}`;
    const conv = i % 2 === 0 ? 'conv-1' : 'conv-2';
    queries.push({
      id,
      text: i % 3 === 0 ? 'same words' : 'zebra',
      candidateBankIds: [conv],
      category: String(1 + (i % 2)),
      meta: {},
    });
    // Queries 0–3 are the duplicated turn's own tokens: the copies lead and tie.
    const copyRow = memoryRows.find((r) => r.id === `${conv}:D1:3`)!;
    const tokens = i < 4 ? copyRow.tokens : [1, 2].map(() => unit(random));
    queryRows.push({ id, tokens, pooled: i < 4 ? copyRow.pooled : unit(random) });
    adapted.set(
      id,
      tokens.map(() => unit(random)),
    );
    labels.add(id, `${conv}:D1:${i < 4 ? 4 : 1 + (i % 7)}`);
  }
  return { memories, memoryRows, queries, queryRows, adapted, labels };
}

/** A bank side holding `rows` in the given order. */
function side(rows: readonly Row[]) {
  const offsets = new Int32Array(rows.length + 1);
  rows.forEach((r, i) => (offsets[i + 1] = offsets[i]! + r.tokens.length));
  return {
    ids: rows.map((r) => r.id),
    bankIds: rows.every((r) => r.bankId !== undefined) ? rows.map((r) => r.bankId!) : undefined,
    tokenVectors: Float32Array.from(rows.flatMap((r) => r.tokens.flat())),
    tokenOffsets: offsets,
    pooled: Float32Array.from(rows.flatMap((r) => r.pooled)),
  };
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const random = rng(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Scores the benchmark with its memories and queries (and so its bank rows) in `order`. */
async function scoreInOrder(f: ReturnType<typeof fixture>, seed: number | undefined) {
  const memories = seed === undefined ? f.memories : shuffled(f.memories, seed);
  const queries = seed === undefined ? f.queries : shuffled(f.queries, seed + 1);
  const rowOf = new Map([...f.memoryRows, ...f.queryRows].map((r) => [r.id, r]));
  const benchmark: Benchmark = {
    name: 'toy',
    options: {},
    subtasks: ['1', '2'],
    sources: [],
    memories,
    queries,
  };
  const bank = {
    manifest: {
      dataset: 'toy',
      benchmarkHash: 'b'.repeat(64),
      model: { name: 'toy', modelId: 'toy', sha256: 'a'.repeat(64), pooling: 'mean' },
      dtype: 'float32',
      maxLength: 16,
    },
    dim: DIM,
    memories: side(memories.map((m) => rowOf.get(m.id)!)),
    queries: side(queries.map((q) => rowOf.get(q.id)!)),
  } as unknown as OpenedBank;
  const out = tmpDir('bfe-permutation-');
  await scoreAndWrite({
    out,
    bank,
    benchmark,
    labels: f.labels,
    queryIds: undefined,
    k: 4,
    alpha: 0.5,
    ks: [1, 5, 10],
    kSweep: [2, 4, 8],
    backend: 'js',
    adapted: {
      queryTokens: Float32Array.from(queries.flatMap((q) => f.adapted.get(q.id)!.flat())),
      alpha: 0.3,
    },
    splitName: 'all',
    resamples: 200,
    seed: 42,
  });
  const read = (file: string) => readFileSync(join(out, file), 'utf8');
  return {
    results: resultsSchema.parse(JSON.parse(read('results.json'))),
    perQuery: read('per-query.jsonl').trim().split('\n').sort(),
    sweep: read('k-sweep.json'),
  };
}

describe('the score pipeline and file order', () => {
  it('gives identical results.json, per-query.jsonl and k-sweep.json for shuffled files', async () => {
    const f = fixture();
    const first = await scoreInOrder(f, undefined);
    expect(first.results.systems.map((s) => s.name)).toEqual([
      'pooled',
      'maxsim',
      'bm25',
      'sparse-fusion',
      'zero-floor',
      'no-fusion',
      'maxsim-fusion',
      'adapted',
      'adapted-zero-floor',
    ]);
    const ties = tiesMetaSchema.parse(first.results.meta?.ties);
    expect(ties).toMatchObject({ seed: 42, depth: 10 });
    // The duplicated turns tie in every system; BM25 ties its zeros too.
    for (const s of first.results.systems) {
      expect(ties.systems[s.name]!.tiedPositions, s.name).toBeGreaterThan(0);
      expect(ties.systems[s.name]!.queries, s.name).toBe(8);
    }
    for (const seed of [1, 2, 3]) {
      const again = await scoreInOrder(f, seed);
      expect(again.results, `shuffle ${seed}`).toEqual(first.results);
      expect(again.perQuery, `shuffle ${seed}`).toEqual(first.perQuery);
      expect(again.sweep, `shuffle ${seed}`).toBe(first.sweep);
    }
  });
});
