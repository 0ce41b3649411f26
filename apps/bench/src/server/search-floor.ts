/**
 * `pnpm bench:search-floor`: the CPU one search of `bfe serve` cannot avoid — its two model
 * runs, each alone on one thread, as the server runs them: the query encoder (the real MiniLM,
 * LoCoMo questions in batches of `--batch`, as the encoder workers coalesce them) and the
 * token top-k on a resident bank (each question on its own conversation's turns, as the load
 * bench's tenants search them; `OrtSimilarityKernel` with the bank packed once, k = 64, its
 * proposals rescored in float64 by `exactTopK` as the store's exact index does).
 * `--resident-product int8` holds the banks as int8 (`bfe serve --resident-product int8`: k + 32
 * proposals from the integer product) and counts the question tokens whose top-64 differs from
 * the float32 resident's (computed first, unmeasured).
 * `--queries` are spread evenly over the 10 conversations. Prints CPU ms per search for each, the top-k's share of
 * the machine's 78 GFLOP/s per core (2 · rows · tokens · 384 flops), and the searches per
 * second two cores allow for the two alone, before routing, scoring and evidence. Then a whole
 * `MemoryStore.search` in process on one thread, with and without `explain`, on the same banks
 * and questions (`search-floor-store.ts`): what scoring, fusion and evidence add before HTTP.
 * `--query-model NAME` encodes the questions with another graph of `--model` (as `bfe serve
 * --query-model` does; the turns stay `--model`'s); the store part takes both options.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:search-floor
 */
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import {
  INT8_RESIDENT_MARGIN,
  OrtSimilarityKernel,
  exactTopK,
  flatBankSource,
  type TopKResult,
} from '@bfe/index';
import { checkQueryModel, openEmbedder, type Embedder } from '@bfe/store';
import { benchCommand, flag, oneOf, parseCommand, positive } from '../shared/cli.js';
import { cpuMsSince } from '../shared/machine.js';
import { note, out, printJson } from '../shared/table.js';
import { storeSplit, type FloorBank } from './search-floor-store.js';

const command = benchCommand(
  'bench:search-floor',
  "the CPU of one search's two model runs: the query encoder and the resident top-k",
)
  .addOption(
    flag('--queries <n>', 'questions in all, spread over the conversations', positive, '400'),
  )
  .addOption(flag('--batch <n>', 'questions per encoder run', positive, '8'))
  .option('--model <name>', 'installed model', 'all-minilm-l6-v2')
  .option('--query-model <name>', 'another graph of --model that encodes the questions')
  .addOption(
    flag('--resident-product <p>', 'resident banks: fp32 or int8', oneOf(['fp32', 'int8']), 'fp32'),
  );
const { options } = parseCommand<{
  queries: number;
  batch: number;
  model: string;
  queryModel?: string;
  residentProduct: 'fp32' | 'int8';
}>(command);
const int8 = options.residentProduct === 'int8';

const PEAK_GFLOPS = 78;
const K = 64;

const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
const banks = [...new Set(loaded.benchmark.memories.map((m) => m.bankId))].sort();
const embedder = await openEmbedder({ model: options.model, threads: 1 });
if (options.queryModel !== undefined) await checkQueryModel(options.model, options.queryModel);
const questionEmbedder =
  options.queryModel === undefined
    ? embedder
    : await openEmbedder({ model: options.queryModel, threads: 1 });
/** The store's embedder: turns by `--model`, questions by the query model. */
const storeEmbedder: Embedder = {
  ...embedder,
  encode: (texts, role, o) =>
    (role === 'query' ? questionEmbedder : embedder).encode(texts, role, o),
};
const kernel = new OrtSimilarityKernel({ threads: 1 });
/** The float32 resident kernel: the reference top-64 of an int8 run. */
const reference = int8 ? new OrtSimilarityKernel({ threads: 1 }) : undefined;
let rowsCompared = 0;
let rowsDiffering = 0;
let encodeCpu = 0;
let topKCpu = 0;
let searches = 0;
let flops = 0;
let bankTokens = 0;
const perBank = Math.ceil(options.queries / banks.length);
const floorBanks: FloorBank[] = [];
for (const bank of banks) {
  const turns = loaded.benchmark.memories.filter((m) => m.bankId === bank).map((m) => m.text);
  // Question texts only (never their labels), of this conversation.
  const questions = loaded.benchmark.queries
    .filter((q) => q.candidateBankIds?.[0] === bank)
    .slice(0, perBank)
    .map((q) => q.text);
  note(`${bank}: ${turns.length} turns, ${questions.length} questions`);
  floorBanks.push({ bank, turns, questions });
  const memories = await embedder.encode(turns, 'passage');
  const tokens = memories.tokenOffsets[memories.count]!;
  const dim = memories.dim;
  bankTokens += tokens;
  await kernel.makeResident(memories.tokenVectors, tokens, dim, options.residentProduct);
  await reference?.makeResident(memories.tokenVectors, tokens, dim);
  const source = flatBankSource(memories.tokenVectors.subarray(0, tokens * dim), dim);
  // The store's margin for an int8 resident bank; the float32 reference keeps the default.
  const search = (on: OrtSimilarityKernel, q: Float32Array): Promise<TopKResult> =>
    exactTopK(on, q, q.length / dim, source, {
      k: K,
      ...(int8 && on === kernel ? { margin: INT8_RESIDENT_MARGIN } : {}),
    });
  await questionEmbedder.encode(questions.slice(0, options.batch), 'query'); // warm
  const rows: Float32Array[] = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < questions.length; i += options.batch) {
    const e = await questionEmbedder.encode(questions.slice(i, i + options.batch), 'query');
    for (let q = 0; q < e.count; q++) {
      rows.push(e.tokenVectors.subarray(e.tokenOffsets[q]! * dim, e.tokenOffsets[q + 1]! * dim));
    }
  }
  encodeCpu += cpuMsSince(c0);
  const asked = rows.filter((q) => q.length > 0);
  const expected: TopKResult[] = [];
  if (reference !== undefined) for (const q of asked) expected.push(await search(reference, q));
  await search(kernel, asked[0]!);
  const found: TopKResult[] = [];
  const c1 = process.cpuUsage();
  for (const q of asked) found.push(await search(kernel, q));
  topKCpu += cpuMsSince(c1);
  expected.forEach((e, i) => {
    for (let r = 0; r < e.rows; r++) {
      const a = e.indices.subarray(r * K, (r + 1) * K);
      const b = found[i]!.indices.subarray(r * K, (r + 1) * K);
      rowsCompared += 1;
      if (a.some((v, h) => v !== b[h])) rowsDiffering += 1;
    }
  });
  for (const q of asked) flops += 2 * (q.length / dim) * tokens * dim;
  searches += questions.length;
}
await kernel.dispose();
await reference?.dispose();
note('store.search in process…');
const split = await storeSplit(storeEmbedder, floorBanks, options.residentProduct);
await embedder.dispose();
if (questionEmbedder !== embedder) await questionEmbedder.dispose();
const encodeMs = encodeCpu / searches;
const topKMs = topKCpu / searches;
const gflops = flops / (topKCpu / 1000) / 1e9;
const tokens = Math.round(bankTokens / banks.length);
const both = encodeMs + topKMs;
out(
  `query encoder${options.queryModel === undefined ? '' : ` (${options.queryModel})`}: ${encodeMs.toFixed(2)} CPU ms a search (batches of ${options.batch}, ${searches} questions)`,
);
out(
  `resident top-k (${options.residentProduct}) over its conversation (${tokens} tokens on average), rescored: ${topKMs.toFixed(2)} CPU ms a search ` +
    (int8
      ? `(integer products; the float32 product's flops over this time: ${gflops.toFixed(1)} GFLOP/s)`
      : `(${gflops.toFixed(1)} GFLOP/s at 2 · 384 flops a token, ${((gflops / PEAK_GFLOPS) * 100).toFixed(0)} % of ${PEAK_GFLOPS})`),
);
if (int8) {
  out(
    `question tokens whose top-${K} differs from the float32 resident's: ${rowsDiffering} of ${rowsCompared}`,
  );
}
out(
  `the two alone: ${both.toFixed(2)} CPU ms a search, at most ${(2000 / both).toFixed(0)} searches/s on two cores`,
);
out(
  `store.search in process, one thread, k = 10 (${split.searches} questions): ${split.plainMs.toFixed(2)} CPU ms ` +
    `without explain, ${split.explainMs.toFixed(2)} with (evidence ${(split.explainMs - split.plainMs).toFixed(2)}); ` +
    `beyond the two model runs: ${(split.plainMs - both).toFixed(2)} / ${(split.explainMs - both).toFixed(2)} ms ` +
    `(the store encodes one question a call, the floor above --batch ${options.batch})`,
);
printJson({
  banks: banks.length,
  meanTokens: tokens,
  questions: searches,
  encodeMs,
  topKMs,
  gflops,
  residentProduct: options.residentProduct,
  ...(int8 ? { rowsCompared, rowsDiffering } : {}),
  storePlainMs: split.plainMs,
  storeExplainMs: split.explainMs,
});
