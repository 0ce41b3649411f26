/**
 * How the English BM25 tables move with the Unicode tokeniser (METHOD.md §8, "BM25"): BM25
 * alone, without the encoder, on LoCoMo (the main job's options: turns, categories 1–4),
 * LongMemEval-S and COVID-QA, every query ranked over its own candidates and evaluated by
 * `@bfe/eval`. Two preparations under the same BM25 (k1 1.2, b 0.75, IDF over the
 * candidates, ties by the seeded hash of the memory id):
 *
 * - before: the former preparation, `wink-nlp-utils` 2.1.0 `lowerCase`, `tokenize0` (ASCII
 *   `[A-Za-z0-9_]` runs, elisions removed, `n't` → `not`), `removeWords` (English stop words),
 *   `stem` (Porter2) — kept here only as the comparator;
 * - after: the dataset's default (`resolveBm25Options`: English for these three).
 *
 * Prints R@10 and NDCG@10 (×100) before, after and after − before, per dataset. The
 * predeclared expectation: no English figure moves by more than 0.3 points.
 *
 *   BFE_DATA_MIRROR=<dir> pnpm bench:bm25-tables [--datasets locomo,longmemeval-s,covidqa] [--json]
 */
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { dataLocationFromEnv, datasetLanguage, loadDataset } from '@bfe/datasets';
import { evaluate, type Evaluation } from '@bfe/eval';
import { groupByCandidates, rankBm25, resolveBm25Options, type Rankings } from '@bfe/scorer';

interface WinkNlpUtils {
  string: { lowerCase(s: string): string; tokenize0(s: string): string[] };
  tokens: { removeWords(tokens: string[]): string[]; stem(tokens: string[]): string[] };
}

const nlp = createRequire(import.meta.url)('wink-nlp-utils') as WinkNlpUtils;

/** The former BM25 preparation, step for step. */
function formerTokens(text: string): string[] {
  return nlp.tokens.stem(nlp.tokens.removeWords(nlp.string.tokenize0(nlp.string.lowerCase(text))));
}

const DATASETS = ['locomo', 'longmemeval-s', 'covidqa'];
const KS = [1, 5, 10, 50];

interface Row {
  readonly dataset: string;
  readonly queries: number;
  readonly memories: number;
  readonly bm25: string;
  readonly before: { readonly recall10: number; readonly ndcg10: number };
  readonly after: { readonly recall10: number; readonly ndcg10: number };
  /** Queries whose top-10 list differs. */
  readonly changedTop10: number;
  readonly seconds: number;
}

async function measure(name: string): Promise<Row> {
  const t0 = performance.now();
  const { benchmark, labels } = await loadDataset(name, { location: dataLocationFromEnv() });
  const memories = {
    ids: benchmark.memories.map((m) => m.id),
    bankIds: benchmark.memories.map((m) => m.bankId),
  };
  const memoryTexts = benchmark.memories.map((m) => m.text);
  const groups = groupByCandidates(memories, benchmark.queries);
  const candidates = new Map<string, ReadonlySet<string>>();
  for (const g of groups) for (const q of g.queries) candidates.set(q.id, g.ids);
  const subtaskOf = new Map(benchmark.queries.map((q) => [q.id, q.category]));
  const score = (runs: Rankings): Evaluation =>
    evaluate({ runs, labels, candidates, subtaskOf, subtasks: benchmark.subtasks, ks: KS });
  const bm25 = resolveBm25Options(undefined, datasetLanguage(name));
  const beforeRuns = rankBm25({ memories, memoryTexts, groups, top: 50, tokenizer: formerTokens });
  const afterRuns = rankBm25({ memories, memoryTexts, groups, top: 50, bm25 });
  let changedTop10 = 0;
  for (const [id, ranking] of afterRuns) {
    const was = beforeRuns.get(id) ?? [];
    if (ranking.slice(0, 10).join('\n') !== was.slice(0, 10).join('\n')) changedTop10 += 1;
  }
  const figures = (e: Evaluation) => ({
    recall10: e.metrics['recall@10'] ?? Number.NaN,
    ndcg10: e.metrics['ndcg@10'] ?? Number.NaN,
  });
  return {
    dataset: name,
    queries: candidates.size,
    memories: memoryTexts.length,
    bm25: `${bm25.language}, IDF over the ${bm25.idf}`,
    before: figures(score(beforeRuns)),
    after: figures(score(afterRuns)),
    changedTop10,
    seconds: (performance.now() - t0) / 1000,
  };
}

const pts = (x: number) => (100 * x).toFixed(2);
const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(100 * x).toFixed(2)}`;

function print(rows: readonly Row[]): void {
  const head = ['dataset', 'queries', 'R@10 before', 'R@10 after', 'Δ', 'NDCG@10 before'];
  const cells = rows.map((r) => [
    r.dataset,
    String(r.queries),
    pts(r.before.recall10),
    pts(r.after.recall10),
    signed(r.after.recall10 - r.before.recall10),
    pts(r.before.ndcg10),
    pts(r.after.ndcg10),
    signed(r.after.ndcg10 - r.before.ndcg10),
    String(r.changedTop10),
  ]);
  const header = [...head, 'NDCG@10 after', 'Δ', 'top-10 changed'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) => c.map((x, i) => x.padStart(widths[i]!)).join('  ');
  process.stdout.write(`${line(header)}\n`);
  for (const c of cells) process.stdout.write(`${line(c)}\n`);
  process.stdout.write(
    'before: wink-nlp-utils 2.1.0 lowerCase, tokenize0, English stop words, Porter2; ' +
      `after: the Unicode tokeniser, ${rows.map((r) => `${r.dataset} ${r.bm25}`).join('; ')}. ` +
      'Points ×100; BM25 k1 1.2, b 0.75, IDF over the candidates in both.\n',
  );
  const moved = rows.filter(
    (r) =>
      Math.abs(r.after.recall10 - r.before.recall10) > 0.003 ||
      Math.abs(r.after.ndcg10 - r.before.ndcg10) > 0.003,
  );
  process.stdout.write(
    moved.length === 0
      ? 'Within the predeclared 0.3 points on every dataset.\n'
      : `Beyond the predeclared 0.3 points: ${moved.map((r) => r.dataset).join(', ')}.\n`,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { datasets: { type: 'string' }, json: { type: 'boolean' } },
  });
  const names = values.datasets?.split(',').map((s) => s.trim()) ?? DATASETS;
  const rows: Row[] = [];
  for (const name of names) {
    rows.push(await measure(name));
    process.stderr.write(`${name}: ${rows.at(-1)!.seconds.toFixed(1)} s\n`);
  }
  if (values.json === true) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  else print(rows);
}

await main();
