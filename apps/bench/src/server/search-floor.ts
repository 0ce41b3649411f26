/**
 * `pnpm bench:search-floor`: the CPU one search of `bfe serve` cannot avoid — its two model
 * runs, each alone on one thread, as the server runs them: the query encoder (the real MiniLM,
 * LoCoMo questions in batches of `--batch`, as the encoder workers coalesce them) and the
 * token top-k on a resident bank (one LoCoMo conversation's turns, `OrtSimilarityKernel`
 * with the bank packed once, k = 64). Prints CPU ms per search for each, the top-k's share of
 * the machine's 78 GFLOP/s per core (2 · rows · tokens · 384 flops), and the searches per
 * second two cores allow for the two alone, before routing, scoring and evidence.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:search-floor
 */
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { OrtSimilarityKernel } from '@bfe/index';
import { openEmbedder } from '@bfe/store';
import { benchCommand, flag, parseCommand, positive } from '../shared/cli.js';
import { note, out, printJson } from '../shared/table.js';

const command = benchCommand(
  'bench:search-floor',
  "the CPU of one search's two model runs: the query encoder and the resident top-k",
)
  .addOption(flag('--queries <n>', 'questions of the conversation', positive, '400'))
  .addOption(flag('--batch <n>', 'questions per encoder run', positive, '8'))
  .option('--model <name>', 'installed model', 'all-minilm-l6-v2');
const { options } = parseCommand<{ queries: number; batch: number; model: string }>(command);

const PEAK_GFLOPS = 78;
const K = 64;
const cpuMs = (from: NodeJS.CpuUsage): number => {
  const c = process.cpuUsage(from);
  return (c.user + c.system) / 1000;
};

const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
const bank = loaded.benchmark.memories[0]!.bankId;
const turns = loaded.benchmark.memories.filter((m) => m.bankId === bank).map((m) => m.text);
// Question texts only (never their labels), of the same conversation, cycled to `--queries`.
const own = loaded.benchmark.queries.filter((q) => q.candidateBankIds?.[0] === bank);
const questions = Array.from({ length: options.queries }, (_, i) => own[i % own.length]!.text);

const embedder = await openEmbedder({ model: options.model, threads: 1 });
note(`encoding the ${turns.length} turns of ${bank}`);
const memories = await embedder.encode(turns, 'passage');
const tokens = memories.tokenOffsets[memories.count]!;
const dim = memories.dim;

await embedder.encode(questions.slice(0, options.batch), 'query'); // warm
const encoded = [];
const c0 = process.cpuUsage();
for (let i = 0; i < questions.length; i += options.batch) {
  encoded.push(await embedder.encode(questions.slice(i, i + options.batch), 'query'));
}
const encodeMs = cpuMs(c0) / questions.length;

const kernel = new OrtSimilarityKernel({ threads: 1 });
await kernel.makeResident(memories.tokenVectors, tokens, dim);
let rows = 0;
const queryRows: Float32Array[] = [];
for (const e of encoded) {
  for (let q = 0; q < e.count; q++) {
    const from = e.tokenOffsets[q]!;
    const to = e.tokenOffsets[q + 1]!;
    queryRows.push(e.tokenVectors.subarray(from * dim, to * dim));
    rows += to - from;
  }
}
const nonEmpty = queryRows.filter((q) => q.length > 0);
await kernel.topK(nonEmpty[0]!, nonEmpty[0]!.length / dim, memories.tokenVectors, tokens, dim, K);
const c1 = process.cpuUsage();
for (const q of nonEmpty) {
  await kernel.topK(q, q.length / dim, memories.tokenVectors, tokens, dim, K);
}
const topKMs = cpuMs(c1) / questions.length;
const gflops = (2 * rows * tokens * dim) / ((topKMs * questions.length) / 1000) / 1e9;
await kernel.dispose();
await embedder.dispose();

const both = encodeMs + topKMs;
out(
  `query encoder: ${encodeMs.toFixed(2)} CPU ms a search (batches of ${options.batch}, ` +
    `${(rows / questions.length).toFixed(1)} content tokens a question)`,
);
out(
  `resident top-k over ${tokens} tokens: ${topKMs.toFixed(2)} CPU ms a search ` +
    `(${gflops.toFixed(1)} GFLOP/s, ${((gflops / PEAK_GFLOPS) * 100).toFixed(0)} % of ${PEAK_GFLOPS})`,
);
out(
  `the two alone: ${both.toFixed(2)} CPU ms a search, at most ${(2000 / both).toFixed(0)} searches/s on two cores`,
);
printJson({ bank, tokens, questions: questions.length, encodeMs, topKMs, gflops });
