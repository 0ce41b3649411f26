/**
 * The candidate-set layout against the per-bank one on the same graphs: for an HNSW run built
 * with one graph per bank (before candidate sets), opens its graphs per bank (`memoryBank`, the
 * old layout) and again as candidate sets (each set's graph is the file of the bank whose
 * memories equal the set, linked under `set-<i>.usearch` with a `layout.json`), searches every
 * evaluated query of the base run (all its content tokens, k 64, its own candidates) through
 * both and counts the query tokens whose hits (tokens and values) differ. On LoCoMo a candidate
 * set is a conversation, so every set is a bank and the count must be 0: the candidate-set
 * search reads the same graph with the same request.
 *
 * node --conditions=@bfe/source --import tsx apps/bench/src/index/table5-layout.ts <base-run> <hnsw-run>…
 */
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  HnswTokenIndex,
  LAYOUT_FILE,
  codecModelSchema,
  fileCodeSource,
  type CodecModel,
  type HnswSide,
} from '@bfe/index';
import { probe, receiptOf, stageDir, TOKEN_K } from './table5-tokens.js';

async function compare(baseDir: string, runDir: string): Promise<string> {
  const { items, bank } = await probe(baseDir);
  const dir = stageDir(await receiptOf(runDir), 'index');
  if (dir === undefined) throw new Error(`${runDir}: no index stage`);
  const model = codecModelSchema.parse(
    JSON.parse(await readFile(join(dir, 'codec.json'), 'utf8')),
  ) as CodecModel;
  const results = JSON.parse(await readFile(join(runDir, 'results.json'), 'utf8')) as {
    runs: { results: { meta: { index: { params: Record<string, number> } } } }[];
  };
  const p = results.runs[0]!.results.meta.index.params;
  const params = { M: p['M']!, efConstruction: p['efConstruction']!, efSearch: p['efSearch']! };
  const { memories } = bank;
  const ids = [...new Set(memories.bankIds!)].sort();
  const number = new Map(ids.map((id, i) => [id, i] as const));
  const memoryBank = Int32Array.from(memories.bankIds!, (id) => number.get(id)!);
  // Codes read by position, never whole.
  const codes = fileCodeSource({
    path: join(dir, 'codes.bin'),
    bytesPerToken: model.bytesPerToken,
    segments: [{ offset: 0, rows: memories.tokenOwner.length }],
  });
  const side: HnswSide = {
    model,
    codes,
    tokenOffsets: memories.tokenOffsets,
    ids: memories.ids,
    memoryBank,
  };
  // The distinct candidate sets of the evaluated queries, each the memories of one bank.
  const sets = new Map<string, Int32Array>();
  for (const it of items) sets.set(Array.from(it.memories).join(), it.memories);
  const work = await mkdtemp(join(tmpdir(), 'table5-layout-'));
  try {
    const ordered = [...sets.values()];
    for (const [i, set] of ordered.entries()) {
      const b = memoryBank[set[0]!]!;
      const whole = memoryBank.reduce((n, x) => n + (x === b ? 1 : 0), 0);
      if (set.some((m) => memoryBank[m] !== b) || set.length !== whole) {
        throw new Error(`candidate set ${i} is not one bank`);
      }
      await symlink(join(dir, 'hnsw', `bank-${b}.usearch`), join(work, `set-${i}.usearch`));
    }
    const layout = { candidateSets: ordered.map((s) => Array.from(s)) };
    await writeFile(join(work, LAYOUT_FILE), JSON.stringify(layout));
    const perBank = await HnswTokenIndex.load(join(dir, 'hnsw'), side, params);
    const perSet = await HnswTokenIndex.load(work, side, params);
    const dim = bank.dim;
    const qv = bank.queries.tokenVectors;
    const qo = bank.queries.tokenOffsets;
    let rows = 0;
    let differ = 0;
    let widenedBank = 0;
    let widenedSet = 0;
    for (const it of items) {
      const n = qo[it.row + 1]! - qo[it.row]!;
      const q = qv.subarray(qo[it.row]! * dim, qo[it.row + 1]! * dim);
      const opts = { memories: it.memories, clampK: true } as const;
      const a = await perBank.search(q, n, TOKEN_K, opts);
      const b = await perSet.search(q, n, TOKEN_K, opts);
      widenedBank += a.widenedRows;
      widenedSet += b.widenedRows;
      for (let r = 0; r < n; r++) {
        const span = [r * a.k, (r + 1) * a.k] as const;
        const same =
          a.k === b.k &&
          a.tokens.subarray(...span).every((t, j) => t === b.tokens[span[0] + j]) &&
          a.values.subarray(...span).every((v, j) => v === b.values[span[0] + j]);
        if (!same) differ++;
        rows++;
      }
    }
    perBank.dispose();
    perSet.dispose();
    return `${runDir}: ${sets.size} candidate sets (= banks), ${items.length} queries, ${rows} query tokens, ${differ} with different hits; widened rows per bank ${widenedBank}, per set ${widenedSet}`;
  } finally {
    codes.close();
    await rm(work, { recursive: true, force: true });
  }
}

const [base, ...runs] = process.argv.slice(2);
if (base === undefined || runs.length === 0) {
  throw new Error('usage: table5-layout.ts <base-run> <hnsw-run>…');
}
for (const run of runs) process.stdout.write(`${await compare(base, run)}\n`);
