/**
 * `pnpm bench:codec-latency`: a benchmark, not a test. Exact search over a codec's stored codes,
 * one query (24 tokens, k 64) against a synthetic bank of LoCoMo conversation shape (memories of
 * 20 tokens), per codec: today's decode path (the kernel over codes decoded to float32 in
 * JavaScript, `codecTokenStore`) vs `CodecExactTokenIndex` (codes cast in onnxruntime), each
 * beside exact fp32 search over the float32 bank measured in the same run. Also checks that both
 * codec paths return the same tokens and float64 values.
 *
 * pnpm bench:codec-latency --sizes 20000,200000 --queries 30
 */
import {
  CodecExactTokenIndex,
  ExactTokenIndex,
  OrtSimilarityKernel,
  codecTokenStore,
  encodeTokens,
  flatTokenStore,
  prepareQuery,
  trainCodec,
  type CodecName,
  type TokenHits,
  type TokenIndex,
} from '@bfe/index';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { benchCommand, flag, intList, parseCommand, positive, someOf } from '../shared/cli.js';
import { median, quantile } from '../shared/stats.js';
import { note, out, printTable } from '../shared/table.js';
import { syntheticBank } from './banks.js';

const K = 64;
const DIM = 384;
const QUERY_TOKENS = 24;
const MEMORY_TOKENS = 20;
const CODECS: CodecName[] = ['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4'];

interface Options {
  sizes: number[];
  queries: number;
  threads?: number;
  codecs: CodecName[];
}

const command = benchCommand(
  'bench:codec-latency',
  "exact search over a codec's stored codes: decoded in JavaScript against cast in onnxruntime, beside exact fp32",
)
  .addOption(flag('--sizes <list>', 'bank tokens', intList, '20000,200000'))
  .addOption(flag('--queries <n>', 'timed queries per bank and path', positive, '30'))
  .addOption(flag('--threads <n>', 'onnxruntime threads (default: onnxruntime’s)', positive))
  .addOption(flag('--codecs <list>', 'codecs', someOf(CODECS), CODECS.join(',')));
const { options } = parseCommand<Options>(command);

/** `count` queries of 24 tokens: bank tokens plus Gaussian noise, normalised. */
function queriesOf(vectors: Float32Array, n: number, count: number, seed: number): Float32Array[] {
  const rng = xoroshiro128plus(seed);
  const out: Float32Array[] = [];
  for (let i = 0; i < count; i++) {
    const q = new Float32Array(QUERY_TOKENS * DIM);
    for (let r = 0; r < QUERY_TOKENS; r++) {
      const t = Math.floor(uniformFloat64(rng) * n);
      let s = 0;
      for (let d = 0; d < DIM; d++) {
        const v = vectors[t * DIM + d]! + 0.05 * (uniformFloat64(rng) - 0.5);
        q[r * DIM + d] = v;
        s += v * v;
      }
      const f = 1 / Math.sqrt(s);
      for (let d = 0; d < DIM; d++) q[r * DIM + d] = q[r * DIM + d]! * f;
    }
    out.push(q);
  }
  return out;
}

async function time(
  index: TokenIndex,
  queries: readonly Float32Array[],
  memories: Int32Array,
  prepare: (q: Float32Array) => Float32Array = (q) => q,
): Promise<{ ms: number[]; hits: TokenHits[] }> {
  await index.search(prepare(queries[0]!), QUERY_TOKENS, K, { memories }); // warm-up
  const ms: number[] = [];
  const hits: TokenHits[] = [];
  for (const q of queries) {
    const t0 = performance.now();
    hits.push(await index.search(prepare(q), QUERY_TOKENS, K, { memories }));
    ms.push(performance.now() - t0);
  }
  return { ms, hits };
}

const equal = (a: TokenHits[], b: TokenHits[]): boolean =>
  a.every(
    (h, i) =>
      h.tokens.every((t, j) => t === b[i]!.tokens[j]) &&
      h.values.every((v, j) => v === b[i]!.values[j]),
  );

const kernel = new OrtSimilarityKernel(
  options.threads === undefined ? {} : { threads: options.threads },
);
const rows: string[][] = [];
for (const n of options.sizes) {
  const bank = syntheticBank('codec', n, DIM, 1, 1, 45);
  const memoriesCount = Math.ceil(n / MEMORY_TOKENS);
  const tokenOffsets = Int32Array.from({ length: memoriesCount + 1 }, (_, m) =>
    Math.min(n, m * MEMORY_TOKENS),
  );
  const memories = Int32Array.from({ length: memoriesCount }, (_, m) => m);
  const queries = queriesOf(bank.vectors, n, options.queries, 46);
  const fp32 = new ExactTokenIndex(
    { tokens: flatTokenStore(bank.vectors, DIM), tokenOffsets },
    kernel,
  );
  for (const name of options.codecs) {
    const model = trainCodec(name, bank.vectors, n, DIM, { seed: 42 });
    const codes = encodeTokens(model, bank.vectors, n);
    const decoded = new ExactTokenIndex(
      { tokens: codecTokenStore(model, codes), tokenOffsets },
      kernel,
    );
    const fast = new CodecExactTokenIndex({ model, codes, tokenOffsets }, kernel);
    // Interleaved per codec: the fp32 reference in the same stretch of load.
    const ref = await time(fp32, queries, memories);
    const old = await time(decoded, queries, memories, (q) => prepareQuery(model, q, QUERY_TOKENS));
    const now = await time(fast, queries, memories);
    const p50 = median(ref.ms);
    const row = (path: string, ms: number[], same: string): string[] => [
      String(n),
      name,
      path,
      median(ms).toFixed(1),
      quantile(ms, 0.9).toFixed(1),
      (median(ms) / p50).toFixed(2),
      same,
    ];
    rows.push(row('fp32 exact (reference)', ref.ms, '—'));
    rows.push(row('decode in JS (before)', old.ms, '—'));
    rows.push(row('codes in onnxruntime', now.ms, equal(now.hits, old.hits) ? 'yes' : 'NO'));
    note(`  ${n} ${name} done (load ${(await loadavg()).trim()})`);
  }
}
await kernel.dispose();
out();
out(
  `24-token query, k ${K}, synthetic banks (memories of ${MEMORY_TOKENS} tokens), dim ${DIM}, ort threads ${options.threads ?? 'default'}`,
);
printTable({
  head: ['bank tokens', 'codec', 'path', 'p50 ms', 'p90 ms', '× fp32 p50', 'same hits'],
  align: ['right', 'left', 'left', 'right', 'right', 'right', 'left'],
  rows,
});

async function loadavg(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return readFile('/proc/loadavg', 'utf8');
}
