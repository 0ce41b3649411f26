import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildHnsw } from '@bfe/index';
import type { HnswParams } from '@bfe/index';
import { exactTopK, recallAt } from './measure.js';
import type { BenchBank } from './measure.js';

export interface PeerResult {
  readonly tokens: number;
  readonly queryTokens: number;
  readonly bfe: { buildS: number; qps: number; recall: number };
  readonly faiss:
    | {
        hnsw: { build_s: number; qps: number; recall: number };
        ivfpq?: { build_s: number; qps: number; recall: number };
      }
    | string;
}

/**
 * bfe's HNSW vs faiss-cpu on the same vectors (the tokens of bank `which` and the query tokens
 * of its queries), one thread each; recall@k vs exact inner product on those tokens.
 */
export async function faissPeer(
  bank: BenchBank,
  which: number,
  params: HnswParams,
  k: number,
  work: string,
  python: string,
): Promise<PeerResult> {
  const tokens: number[] = [];
  for (let t = 0; t < bank.n; t++) if (bank.tokenBank[t] === which) tokens.push(t);
  const dim = bank.dim;
  const x = new Float32Array(tokens.length * dim);
  tokens.forEach((t, j) => x.set(bank.vectors.subarray(t * dim, (t + 1) * dim), j * dim));
  const qs = bank.queries.filter((q) => q.bank === which);
  const rows = qs.reduce((s, q) => s + q.rows, 0);
  const q = new Float32Array(rows * dim);
  let at = 0;
  for (const one of qs) {
    q.set(one.tokens, at);
    at += one.tokens.length;
  }
  const want = exactTopK(
    x,
    dim,
    Int32Array.from({ length: tokens.length }, (_, i) => i),
    q,
    rows,
    k,
  );
  let t0 = performance.now();
  const index = await buildHnsw(x, tokens.length, dim, params, { threads: 1 });
  const buildS = (performance.now() - t0) / 1000;
  t0 = performance.now();
  const res = index.search(q, rows, k);
  const secs = (performance.now() - t0) / 1000;
  index.dispose();
  const bfe = { buildS, qps: rows / secs, recall: recallAt(res.indices, want, rows, k) };
  await writeFile(join(work, 'bank.f32'), x);
  await writeFile(join(work, 'queries.f32'), q);
  let faiss: PeerResult['faiss'];
  if (!existsSync(python)) faiss = `no python at ${python}`;
  else {
    const script = new URL('../../python/index_peers.py', import.meta.url).pathname;
    const args = [
      script,
      join(work, 'bank.f32'),
      join(work, 'queries.f32'),
      String(dim),
      String(k),
      String(params.M),
      String(params.efConstruction),
      String(params.efSearch),
    ];
    try {
      faiss = JSON.parse(
        execFileSync(python, args, { encoding: 'utf8' }).trim().split('\n').pop()!,
      ) as PeerResult['faiss'];
    } catch (e) {
      faiss = `faiss peer failed: ${(e as Error).message.split('\n')[0]}`;
    }
  }
  return { tokens: tokens.length, queryTokens: rows, bfe, faiss };
}
