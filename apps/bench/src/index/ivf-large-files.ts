// bench:big-bank --ivf-large: a run's folder, its token source, sq8 codec and the side searched.
import { join } from 'node:path';
import { fileCodeSource, trainCodec, type CodecSide } from '@bfe/index';
import type { BigBankOptions } from './big-bank-cli.js';
import { memoryOffsets } from './ivf-tokens.js';
import { openTokenSource, type TokenSource } from './token-source.js';

/** Hits a query row keeps. */
export const K = 64;
/** Kernel proposals per row and chunk beyond k, rescored in float64 (exactTopK's margin). */
export const MARGIN = 16;
/** Tokens a chunk of the source. */
export const CHUNK = 65_536;

/** The run's folder: one per source (tokens, noise or real, seed, queries). */
export function folderOf(o: BigBankOptions): string {
  const what = o.real === true ? 'real' : `noise-${o.noise}`;
  return join(o.dir, `ivf-large-${o.tokens}-${what}-seed-${o.seed}-q-${o.queries}x${o.rows}`);
}

/** The run's token source (`--bank`, `--real` or tiled with `--noise`, `--seed`, the queries). */
export function sourceOf(o: BigBankOptions): Promise<TokenSource> {
  return openTokenSource({
    banks: (o.bank ?? '').split(',').filter((b) => b !== ''),
    real: o.real === true,
    noise: o.noise,
    seed: o.seed,
    queries: o.queries,
    rows: o.rows,
  });
}

/** The sq8 codec of the run: trained on the source's first chunk (the same every phase). */
export async function codecOf(o: BigBankOptions) {
  const source = await sourceOf(o);
  const m = Math.min(CHUNK, o.tokens);
  const first = new Float32Array(m * source.dim);
  source.fill(first, 0, m);
  return { model: trainCodec('sq8', first, m, source.dim), first, source };
}

/**
 * The side the index searches: the sq8 codes by position, memories of 128 tokens; `stats`
 * counts the reads from the file.
 */
export async function sideOf(
  o: BigBankOptions,
  stats?: { bytes: number; reads: number },
): Promise<CodecSide> {
  const { model } = await codecOf(o);
  const n = o.tokens;
  const codes = fileCodeSource(
    {
      path: join(folderOf(o), 'codes.sq8'),
      bytesPerToken: model.bytesPerToken,
      segments: [{ offset: 0, rows: n }],
    },
    stats === undefined ? {} : { stats },
  );
  const tokenOffsets = memoryOffsets(n);
  return { model, codes, tokenOffsets };
}

/** The index file of `(centroids, bits)`, without its extension. */
export const indexName = (o: BigBankOptions, c: number, bits: number): string =>
  join(folderOf(o), `ivf-${c}-${bits}-sample-${o.ivfSample ?? 'default'}-it-${o.ivfIterations}`);
