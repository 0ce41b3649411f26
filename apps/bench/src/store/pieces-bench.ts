/**
 * `pnpm bench:store --parts pieces`: a bank spread over several segments, viewed as pieces of
 * the segments' own states (the store's views) against the same view made one contiguous array
 * (the peer, measured in the same run on the same view): the time to view the bank again after
 * one update (a write that makes the view anew), the bytes the view adds beyond its segments'
 * decoded states, and one exact search (sparse fusion, token k 64, top 10, evidence; the
 * scorer's own exact index, no resident session, no graph). Real LoCoMo token states (MiniLM),
 * repeated under new ids past LoCoMo's count; the store's default codec.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { LoadedDataset } from '@bfe/core';
import { SparseScorer } from '@bfe/scorer';
import {
  MemoryStore,
  PieceTokens,
  searchView,
  type BankView,
  type Embedder,
  type EncodedTexts,
} from '@bfe/store';
import { replayEmbedder } from '../shared/banks.js';
import { note } from '../shared/table.js';
import { ms, p50p90 } from './latency-banks.js';

export const PIECES_HEAD = [
  'view',
  'memories',
  'tokens',
  'segments',
  'pieces',
  'view again after an update p50 ms',
  'MiB beyond the segments',
  'exact search p50/p90 ms',
  'load',
];

export interface PiecesOptions {
  readonly memories: number;
  /** Flushes while the bank is built (the store also flushes when its memtable fills). */
  readonly segments: number;
  readonly rounds: number;
  readonly queries: readonly string[];
  readonly work: string;
}

/** The part: LoCoMo's memories encoded once, its first `queries` questions searched. */
export async function piecesPart(
  benchmark: LoadedDataset['benchmark'],
  embedder: Embedder,
  o: Omit<PiecesOptions, 'queries'> & { readonly queries: number },
): Promise<string[][]> {
  const unique = [...new Set(benchmark.memories.map((m) => m.text))];
  note(`pieces: encoding ${unique.length} LoCoMo memories …`);
  const all = await embedder.encode(unique, 'passage');
  const queries = benchmark.queries.slice(0, o.queries).map((q) => q.text);
  return piecesRows(all, unique, embedder, { ...o, queries });
}

/** The bank `view` as one contiguous array (a copy of its pieces), no pieces. */
function contiguous(view: BankView): BankView {
  const d: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(view);
  delete d.tokens;
  d.tokenVectors = { value: view.tokens!.read(0, view.tokens!.size), enumerable: true };
  return Object.defineProperties({}, d) as BankView;
}

const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);

export async function piecesRows(
  all: EncodedTexts,
  texts: readonly string[],
  embedder: Embedder,
  o: PiecesOptions,
): Promise<string[][]> {
  const replay = replayEmbedder(embedder, texts, all);
  const dir = join(o.work, 'pieces');
  const item = (i: number) => ({ id: `p${i}`, bank: 'big', text: texts[i % texts.length]! });
  const build = await MemoryStore.open(dir, { embedder: replay, compactSegments: 0 });
  const per = Math.ceil(o.memories / o.segments);
  for (let from = 0; from < o.memories; from += per) {
    for (let i = from; i < Math.min(o.memories, from + per); i += 256)
      await build.add(
        Array.from({ length: Math.min(256, from + per - i, o.memories - i) }, (_, j) =>
          item(i + j),
        ),
      );
    await build.flush();
  }
  await build.close();
  const store = await MemoryStore.open(dir, { embedder: replay, compactSegments: 0 });
  const scorer = await SparseScorer.open();
  try {
    const again = { pieces: [] as number[], contiguous: [] as number[] };
    let view = store.snapshot().bank('big');
    for (let r = 0; r < o.rounds; r++) {
      await store.update([item((r * 7919) % o.memories)]);
      const snap = store.snapshot();
      const t0 = performance.now();
      view = snap.bank('big');
      again.pieces.push(ms(t0));
      const t1 = performance.now();
      contiguous(view);
      again.contiguous.push(again.pieces.at(-1)! + ms(t1));
      await snap.release();
    }
    const flat = contiguous(view);
    const tokens = view.tokenOffsets[view.ids.length]!;
    const pieces = view.tokens;
    if (!(pieces instanceof PieceTokens)) throw new Error('pieces: the view is not in pieces');
    // Pieces that are views into a segment's states add nothing; gathered ones are the view's.
    const gathered = pieces.madeBytes;
    const { segments } = await store.stats();
    const small =
      view.pooled.byteLength + view.tokenIds.byteLength * 2 + view.tokenOffsets.byteLength;
    const searches = { pieces: [] as number[], contiguous: [] as number[] };
    for (let q = -1; q < o.queries.length; q++) {
      const query = await embedder.encode([o.queries[Math.max(0, q)]!], 'query');
      const order =
        q % 2 === 0 ? (['pieces', 'contiguous'] as const) : (['contiguous', 'pieces'] as const);
      for (const which of order) {
        const t0 = performance.now();
        await searchView(which === 'pieces' ? view : flat, query, { k: 10 }, scorer);
        if (q >= 0) searches[which].push(ms(t0));
      }
    }
    const load = loadavg()[0]!.toFixed(2);
    const median = (xs: number[]): string =>
      [...xs].sort((a, b) => a - b)[xs.length >> 1]!.toFixed(1);
    const rows = [
      [
        'pieces (the store)',
        String(view.ids.length),
        String(tokens),
        String(segments),
        String(pieces.pieces.length),
        median(again.pieces),
        mib(small + gathered),
        p50p90(searches.pieces),
        load,
      ],
      [
        'one contiguous copy (peer)',
        String(view.ids.length),
        String(tokens),
        String(segments),
        '1',
        median(again.contiguous),
        mib(small + tokens * view.dim * 4),
        p50p90(searches.contiguous),
        load,
      ],
    ];
    for (const row of rows) note(row.join(' | '));
    return rows;
  } finally {
    await scorer.dispose();
    await store.close({ flush: false });
  }
}
