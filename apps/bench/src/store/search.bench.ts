/**
 * `pnpm bench:search`: a benchmark, not a test. The latency of one store search
 * (`@bfe/store`'s `searchView`: sparse fusion, token k 64, α 0.5, top 10) for one query at a
 * time, against two banks built from LoCoMo with the real MiniLM encoder:
 *
 * - one conversation (the largest, ~700 memories: a LoCoMo-size bank), and
 * - all ten conversations as one bank (5,882 memories: ~10× larger);
 *
 * each as p50/p90 over the conversation's queries of (a) `searchView` with evidence,
 * (b) `searchView` without evidence, (c) the query's encoding plus (a) — the issue's target
 * (search p50 ≤ 20 ms on a LoCoMo-size bank, query encoding included) — beside the peer
 * measured in the same run, the three calls in a rotating order: (d) the bare `SparseScorer.score` call for the same query and
 * candidates (what `bfe score` spends per query in a batch of one), so (a)/(d) is the cost of
 * ranking, explaining and result objects. Needs `BFE_DATA_MIRROR` and the installed model.
 * The machine may be shared: the load average is printed beside the figures.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:search
 * pnpm bench:search --repeats 3 --json
 */
import { loadavg } from 'node:os';
import { dataLocationFromEnv, fetchDataset, loadDataset } from '@bfe/datasets';
import { openEncoder } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { SparseScorer } from '@bfe/scorer';
import { encodedTexts, searchView, type BankView, type EncodedTexts } from '@bfe/store';
import { note, out } from '../shared/output.js';
import { quantile, round } from '../shared/stats.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const repeatsAt = args.indexOf('--repeats');
const repeats = repeatsAt >= 0 ? Number(args[repeatsAt + 1]) : 2;
const log = json ? () => true : note;

async function main(): Promise<void> {
  const location = dataLocationFromEnv();
  await fetchDataset('locomo', location);
  const { benchmark } = await loadDataset('locomo', { location });
  const modelDir = resolveModelDir('all-minilm-l6-v2');
  const encoder = await openEncoder(modelDir, await loadModelManifest(modelDir));
  const scorer = await SparseScorer.open();
  try {
    const byBank = new Map<string, number[]>();
    benchmark.memories.forEach((m, i) =>
      byBank.set(m.bankId, [...(byBank.get(m.bankId) ?? []), i]),
    );
    const largest = [...byBank].sort((a, b) => b[1].length - a[1].length)[0]!;
    const queries = benchmark.queries.filter((q) => q.candidateBankIds?.[0] === largest[0]);
    const banks: Array<[string, number[]]> = [
      [`one conversation (${largest[0]})`, largest[1]],
      ['all ten conversations', benchmark.memories.map((_, i) => i)],
    ];
    const rows = [];
    log(`encoding ${benchmark.memories.length} memories …`);
    const texts = benchmark.memories.map((m) => m.text);
    const all = await encodedTexts(encoder, texts, 'passage');
    for (const [name, memoryRows] of banks) {
      const view = sliceView(
        all,
        memoryRows,
        name,
        benchmark.memories.map((m) => m.id),
        texts,
      );
      const times = {
        explain: [] as number[],
        plain: [] as number[],
        withEncode: [] as number[],
        bare: [] as number[],
      };
      let at = 0;
      for (let rep = 0; rep < repeats; rep++) {
        for (const q of queries) {
          const t0 = performance.now();
          const query = await encodedTexts(encoder, [q.text], 'query');
          const encodeMs = performance.now() - t0;
          const calls: Array<[number[], () => Promise<unknown>]> = [
            [times.explain, () => searchView(view, query, { k: 10 }, scorer)],
            [times.plain, () => searchView(view, query, { k: 10, explain: false }, scorer)],
            [times.bare, () => scorer.score(bareRequest(view, query), bareOptions)],
          ];
          // Rotate the order per query, so no call always runs first after the encoder.
          for (let c = 0; c < calls.length; c++) {
            const [into, call] = calls[(c + at) % calls.length]!;
            const t = performance.now();
            await call();
            const ms = performance.now() - t;
            // The first pass warms caches (tie order, bank checks).
            if (rep === 0) continue;
            into.push(ms);
            if (into === times.explain) times.withEncode.push(encodeMs + ms);
          }
          at += 1;
        }
      }
      const p = (xs: number[]) => ({
        p50: round(quantile(xs, 0.5), 2),
        p90: round(quantile(xs, 0.9), 2),
      });
      rows.push({
        bank: name,
        memories: view.ids.length,
        tokens: view.tokenIds.length,
        queries: times.bare.length,
        searchMs: p(times.explain),
        searchNoEvidenceMs: p(times.plain),
        encodeAndSearchMs: p(times.withEncode),
        bareScorerMs: p(times.bare),
        ratioP50: round(quantile(times.explain, 0.5) / quantile(times.bare, 0.5), 2),
      });
    }
    const report = { loadavg: loadavg().map((x) => round(x, 2)), repeats, rows };
    if (json) {
      out(JSON.stringify(report));
      return;
    }
    out(`load average ${report.loadavg.join(' ')} (shared machine: absolute times are noisy)`);
    out(
      '| bank | memories | tokens | queries | search p50/p90 ms | no evidence p50/p90 | encode+search p50/p90 | bare scorer p50/p90 | search / bare (p50) |',
    );
    out('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      const f = (x: { p50: number; p90: number }) => `${x.p50} / ${x.p90}`;
      out(
        `| ${r.bank} | ${r.memories} | ${r.tokens} | ${r.queries} | ${f(r.searchMs)} | ${f(r.searchNoEvidenceMs)} | ${f(r.encodeAndSearchMs)} | ${f(r.bareScorerMs)} | ${r.ratioP50}× |`,
      );
    }
  } finally {
    await scorer.dispose();
    await encoder.dispose();
  }
}

/** The rows `memoryRows` of one encoding as a bank's view. */
function sliceView(
  all: EncodedTexts,
  memoryRows: readonly number[],
  bank: string,
  ids: readonly string[],
  texts: readonly string[],
): BankView {
  const { dim } = all;
  const offsets = new Int32Array(memoryRows.length + 1);
  memoryRows.forEach((r, i) => {
    offsets[i + 1] = offsets[i]! + all.tokenOffsets[r + 1]! - all.tokenOffsets[r]!;
  });
  const tokens = offsets[memoryRows.length]!;
  const view = {
    bank,
    model: 'all-minilm-l6-v2',
    dim,
    ids: memoryRows.map((r) => ids[r]!),
    texts: memoryRows.map((r) => texts[r]!),
    metas: memoryRows.map(() => undefined),
    pooled: new Float32Array(memoryRows.length * dim),
    tokenOffsets: offsets,
    tokenVectors: new Float32Array(tokens * dim),
    tokenIds: new Int32Array(tokens),
    tokenPositions: new Int32Array(tokens),
  };
  memoryRows.forEach((r, i) => {
    const from = all.tokenOffsets[r]!;
    const to = all.tokenOffsets[r + 1]!;
    view.pooled.set(all.pooled.subarray(r * dim, (r + 1) * dim), i * dim);
    view.tokenVectors.set(all.tokenVectors.subarray(from * dim, to * dim), offsets[i]! * dim);
    view.tokenIds.set(all.tokenIds.subarray(from, to), offsets[i]!);
    view.tokenPositions.set(all.tokenPositions.subarray(from, to), offsets[i]!);
  });
  return view;
}

const bareOptions = { k: 64, alpha: 0.5, maxsim: false, clampK: true };

/** The scorer request a search makes, minus ranking and evidence (the peer). */
function bareRequest(view: BankView, query: EncodedTexts) {
  return {
    memories: {
      dim: view.dim,
      tokenVectors: view.tokenVectors,
      tokenOffsets: view.tokenOffsets,
      pooled: view.pooled,
      ids: view.ids,
    },
    queries: query,
    queryRows: [0],
    candidates: Array.from(view.ids, (_, i) => i),
  };
}

await main();
