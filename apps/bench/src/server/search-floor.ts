/**
 * `pnpm bench:search-floor`: the CPU one search of `bfe serve` cannot avoid — its two model
 * runs, each alone on one thread, as the server runs them: the query encoder (the real MiniLM,
 * LoCoMo questions in batches of `--batch`, as the encoder workers coalesce them) and the
 * token top-k on a resident bank (each question on its own conversation's turns, as the load
 * bench's tenants search them; `OrtSimilarityKernel` with the bank packed once, k = 64).
 * `--queries` are spread evenly over the 10 conversations. Prints CPU ms per search for each, the top-k's share of
 * the machine's 78 GFLOP/s per core (2 · rows · tokens · 384 flops), and the searches per
 * second two cores allow for the two alone, before routing, scoring and evidence. Then a whole
 * `MemoryStore.search` in process on one thread, with and without `explain`, on the same banks
 * and questions (`search-floor-store.ts`): what scoring, fusion and evidence add before HTTP.
 * `--query-model NAME` encodes the questions with another graph of `--model` (as `bfe serve
 * --query-model` does; the turns stay `--model`'s).
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:search-floor
 */
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { OrtSimilarityKernel } from '@bfe/index';
import { checkQueryModel, openEmbedder, type Embedder } from '@bfe/store';
import { benchCommand, flag, parseCommand, positive } from '../shared/cli.js';
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
  .option('--query-model <name>', 'another graph of --model that encodes the questions');
const { options } = parseCommand<{
  queries: number;
  batch: number;
  model: string;
  queryModel?: string;
}>(command);

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
  await kernel.makeResident(memories.tokenVectors, tokens, dim);
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
  await kernel.topK(asked[0]!, asked[0]!.length / dim, memories.tokenVectors, tokens, dim, K);
  const c1 = process.cpuUsage();
  for (const q of asked)
    await kernel.topK(q, q.length / dim, memories.tokenVectors, tokens, dim, K);
  topKCpu += cpuMsSince(c1);
  for (const q of asked) flops += 2 * (q.length / dim) * tokens * dim;
  searches += questions.length;
}
await kernel.dispose();
note('store.search in process…');
const split = await storeSplit(storeEmbedder, floorBanks);
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
  `resident top-k over its conversation (${tokens} tokens on average): ${topKMs.toFixed(2)} CPU ms a search ` +
    `(${gflops.toFixed(1)} GFLOP/s, ${((gflops / PEAK_GFLOPS) * 100).toFixed(0)} % of ${PEAK_GFLOPS})`,
);
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
  storePlainMs: split.plainMs,
  storeExplainMs: split.explainMs,
});
