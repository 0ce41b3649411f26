/**
 * The bank views the store's latency parts (`search`, `hybrid`) measure: LoCoMo's largest
 * conversation with its own queries, then one bank per requested size (LoCoMo's turns, repeated
 * under new ids past their count) with queries spread over LoCoMo's. Encoded once with the
 * store's embedder; each view is built when measured, so one large bank is in memory at a time.
 */
import type { LoadedDataset } from '@bfe/core';
import type { BankView, Embedder } from '@bfe/store';
import { sliceView } from '../shared/banks.js';
import { quantile } from '../shared/stats.js';
import { note } from '../shared/table.js';

/** One measured bank: its row label, its view (built on demand) and its queries. */
export interface LatencyBank {
  readonly name: string;
  readonly build: () => BankView;
  readonly queries: string[];
}

/** What the latency parts measure. */
export interface LatencyOptions {
  /** Bank sizes in memories (besides the one-conversation bank). */
  readonly sizes: readonly number[];
  /** Queries per sized bank (spread over LoCoMo's queries); the conversation bank uses its own. */
  readonly queries: number;
  /** onnxruntime intra-op threads of the scorer and the resident kernels (default: its choice). */
  readonly threads?: number;
}

/** Milliseconds since `t0` (a `performance.now()`). */
export const ms = (t0: number): number => performance.now() - t0;

/** `p50 / p90` of latencies in milliseconds, as the tables print them. */
export const p50p90 = (xs: readonly number[]): string =>
  `${quantile(xs, 0.5).toFixed(2)} / ${quantile(xs, 0.9).toFixed(2)}`;

/** The banks, and the encoded texts they are cut from (`part` names the progress line). */
export async function latencyBanks(
  benchmark: LoadedDataset['benchmark'],
  embedder: Embedder,
  options: LatencyOptions,
  part: string,
): Promise<{ banks: LatencyBank[]; texts: string[] }> {
  const memories = benchmark.memories;
  const byBank = new Map<string, number[]>();
  memories.forEach((m, i) => byBank.set(m.bankId, [...(byBank.get(m.bankId) ?? []), i]));
  const [conv, convRows] = [...byBank].sort((a, b) => b[1].length - a[1].length)[0]!;
  // Without sized banks, only the conversation is encoded.
  const encoded = options.sizes.length === 0 ? convRows : memories.map((_, i) => i);
  const texts = encoded.map((r) => memories[r]!.text);
  note(`${part}: encoding ${texts.length} LoCoMo memories …`);
  const all = await embedder.encode(texts, 'passage');
  const at = new Map(encoded.map((r, i) => [r, i]));
  const banks: LatencyBank[] = [
    {
      name: `one conversation (${conv})`,
      build: () =>
        sliceView(
          all,
          convRows.map((r) => at.get(r)!),
          conv,
          convRows.map((r) => memories[r]!.id),
          texts,
        ),
      queries: benchmark.queries.filter((q) => q.candidateBankIds?.[0] === conv).map((q) => q.text),
    },
  ];
  const stride = Math.max(1, Math.floor(benchmark.queries.length / options.queries));
  const spread = benchmark.queries
    .filter((_, i) => i % stride === 0)
    .slice(0, options.queries)
    .map((q) => q.text);
  const m = memories.length;
  for (const size of options.sizes) {
    const rows = Array.from({ length: size }, (_, i) => i % m);
    const ids = rows.map((r, i) =>
      i < m ? memories[r]!.id : `${memories[r]!.id}~${Math.floor(i / m)}`,
    );
    banks.push({
      name: size <= m ? `${size} (real)` : `${size} (${m} real, the rest their copies)`,
      build: () => sliceView(all, rows, `size-${size}`, ids, texts),
      queries: spread,
    });
  }
  return { banks, texts };
}
