import { buildBankedHnsw, buildHnsw } from '@bfe/index';
import type { HnswParams } from '@bfe/index';
import { recallAt } from './measure.js';
import type { BenchBank } from './measure.js';

export interface FilterResult {
  readonly bank: string;
  readonly banks: number;
  readonly strategy: 'per-bank' | 'filtered';
  readonly buildS: number;
  readonly recall: number;
  readonly latencies: number[];
}

/** Per-bank indexes vs one index with a memory filter, fp32, against the exact reference. */
export async function filterVsBanked(
  bank: BenchBank,
  ref: Int32Array[],
  params: HnswParams,
  k: number,
): Promise<FilterResult[]> {
  const allowed = new Map<number, Set<number>>();
  for (let t = 0; t < bank.n; t++) {
    const b = bank.tokenBank[t]!;
    let s = allowed.get(b);
    if (s === undefined) allowed.set(b, (s = new Set()));
    s.add(bank.tokenMemory[t]!);
  }
  const out: FilterResult[] = [];
  let t0 = performance.now();
  const banked = await buildBankedHnsw(bank.vectors, bank.n, bank.dim, bank.tokenBank, params, {
    threads: 1,
  });
  let buildS = (performance.now() - t0) / 1000;
  const run = (
    search: (q: BenchBank['queries'][number]) => Int32Array,
  ): { recall: number; latencies: number[] } => {
    const latencies: number[] = [];
    let recall = 0;
    bank.queries.forEach((q, i) => {
      const s = performance.now();
      const got = search(q);
      latencies.push(performance.now() - s);
      recall += recallAt(got, ref[i]!, q.rows, k) / bank.queries.length;
    });
    return { recall, latencies };
  };
  out.push({
    bank: bank.name,
    banks: allowed.size,
    strategy: 'per-bank',
    buildS,
    ...run((q) => banked.search(q.tokens, q.rows, k, q.bank).indices),
  });
  banked.dispose();
  t0 = performance.now();
  const global = await buildHnsw(bank.vectors, bank.n, bank.dim, params, { threads: 1 });
  buildS = (performance.now() - t0) / 1000;
  const tokenMemory = bank.tokenMemory;
  out.push({
    bank: bank.name,
    banks: allowed.size,
    strategy: 'filtered',
    buildS,
    ...run(
      (q) =>
        global.search(q.tokens, q.rows, k, { tokenMemory, allowedMemories: allowed.get(q.bank)! })
          .indices,
    ),
  });
  global.dispose();
  return out;
}
