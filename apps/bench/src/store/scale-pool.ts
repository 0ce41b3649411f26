/**
 * The real encoded memories the `scale` part of `pnpm bench:store` builds its store from: the
 * MiniLM token states of LoCoMo's memories and of LongMemEval-S's first `lmeMemories`, read from
 * the encode cache (the newest `objects/encode/<key>/bank` of each, as the experiments wrote them), and an
 * embedder that replays them by text, so a store of any size is built without encoding. Queries
 * are replayed the same way from the banks' encoded queries.
 */
import { open, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { openBank, type FileBankSide, type VectorFileLayout } from '@bfe/encoder';
import { rng } from '@bfe/index/testing';
import type { Embedder, EncodedTexts } from '@bfe/store';
import { repoRoot } from '../shared/paths.js';
import { pickRows } from '../shared/banks.js';

/** The encode-cache keys of the two benchmarks' banks (MiniLM, fp32, max length 128). */
/** The experiments whose encode stage writes each source's bank (run one to fill the cache). */
export const ENCODED_BY = {
  locomo: 'configs/experiments/locomo-minilm.yaml',
  'longmemeval-s': 'configs/experiments/table5/longmemeval-s.yaml',
} as const;

export type PoolSource = keyof typeof ENCODED_BY;

/** Encoded memories (or queries) of both sources, one row each, with their texts. */
export interface EncodedPool {
  readonly model: string;
  readonly encoded: EncodedTexts;
  readonly texts: readonly string[];
  /** Rows `[0, split)` are LoCoMo's, `[split, count)` LongMemEval-S's. */
  readonly split: number;
}

/**
 * The newest bank in the encode cache (`$BFE_CACHE_DIR`, default `.bfe-cache`) of `source`'s
 * memories by MiniLM at max length 128, unwindowed, as the experiments encode it.
 */
async function bankDir(source: PoolSource): Promise<string> {
  const root = join(process.env.BFE_CACHE_DIR ?? join(repoRoot, '.bfe-cache'), 'objects/encode');
  const entries = await readdir(root).catch(() => [] as string[]);
  let best: { dir: string; time: number } | undefined;
  for (const key of entries) {
    const dir = join(root, key, 'bank');
    const manifest = await readFile(join(dir, 'bank.json'), 'utf8').catch(() => undefined);
    if (manifest === undefined) continue;
    const m = JSON.parse(manifest) as {
      dataset?: string;
      maxLength?: number;
      window?: unknown;
      model?: { name?: string };
    };
    if (m.dataset !== source || m.maxLength !== 128 || m.window !== undefined) continue;
    if (m.model?.name !== 'all-minilm-l6-v2') continue;
    const time = (await stat(join(dir, 'bank.json'))).mtimeMs;
    if (best === undefined || time > best.time) best = { dir, time };
  }
  if (best === undefined)
    throw new Error(
      `scale: no encoded ${source} bank in ${root}: run \`pnpm bfe run ${ENCODED_BY[source]}\` first`,
    );
  return best.dir;
}

/** Reads token rows `[0, tokens)` of a streamed token file into one array. */
async function readTokenRange(layout: VectorFileLayout, tokens: number): Promise<Float32Array> {
  if (layout.dtype !== 'float32') throw new Error(`${layout.path}: expected float32 vectors`);
  const { dim } = layout;
  const outVectors = new Float32Array(tokens * dim);
  const bytes = new Uint8Array(outVectors.buffer);
  const handle = await open(layout.path, 'r');
  try {
    let at = 0;
    for (const seg of layout.segments) {
      if (at >= tokens) break;
      const rows = Math.min(seg.rows, tokens - at);
      const length = rows * dim * 4;
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(
          bytes,
          at * dim * 4 + done,
          Math.min(length - done, 2 ** 28),
          seg.offset + done,
        );
        if (bytesRead === 0) throw new Error(`${layout.path}: ends before its vectors`);
        done += bytesRead;
      }
      at += rows;
    }
  } finally {
    await handle.close();
  }
  return outVectors;
}

type Side = Omit<FileBankSide, 'tokenFile'> & { readonly tokenVectors?: Float32Array };

/** Rows `[0, rows)` of one side as encoded texts (truncated: a token at the last position). */
function encodedRows(side: Side, vectors: Float32Array, rows: number, dim: number): EncodedTexts {
  const tokens = side.tokenOffsets[rows]!;
  const truncated = new Uint8Array(rows);
  for (let r = 0; r < rows; r++) {
    const last = side.tokenOffsets[r + 1]! - 1;
    truncated[r] = last >= side.tokenOffsets[r]! && side.tokenPosition[last]! >= 126 ? 1 : 0;
  }
  return {
    count: rows,
    dim,
    pooled: side.pooled.slice(0, rows * dim),
    tokenOffsets: side.tokenOffsets.slice(0, rows + 1),
    tokenVectors: vectors.length === tokens * dim ? vectors : vectors.slice(0, tokens * dim),
    tokenIds: side.tokenId.slice(0, tokens),
    tokenPositions: side.tokenPosition.slice(0, tokens),
    truncated,
  };
}

/** Concatenates encodings row-wise. */
function concat(parts: readonly EncodedTexts[]): EncodedTexts {
  const dim = parts[0]!.dim;
  const count = parts.reduce((a, p) => a + p.count, 0);
  const tokens = parts.reduce((a, p) => a + p.tokenOffsets[p.count]!, 0);
  const o = {
    count,
    dim,
    pooled: new Float32Array(count * dim),
    tokenOffsets: new Int32Array(count + 1),
    tokenVectors: new Float32Array(tokens * dim),
    tokenIds: new Int32Array(tokens),
    tokenPositions: new Int32Array(tokens),
    truncated: new Uint8Array(count),
  };
  let rows = 0;
  let toks = 0;
  for (const p of parts) {
    const n = p.tokenOffsets[p.count]!;
    o.pooled.set(p.pooled, rows * dim);
    for (let r = 1; r <= p.count; r++) o.tokenOffsets[rows + r] = toks + p.tokenOffsets[r]!;
    o.tokenVectors.set(p.tokenVectors.subarray(0, n * dim), toks * dim);
    o.tokenIds.set(p.tokenIds.subarray(0, n), toks);
    o.tokenPositions.set(p.tokenPositions.subarray(0, n), toks);
    o.truncated.set(p.truncated, rows);
    rows += p.count;
    toks += n;
  }
  return o;
}

/**
 * The memory pool (LoCoMo's rows, then LongMemEval-S's first `lmeMemories`; 0 leaves
 * LongMemEval-S out) and the query pool (the same sources' encoded queries).
 */
export async function loadPools(
  lmeMemories: number,
): Promise<{ memories: EncodedPool; queries: EncodedPool }> {
  const mem: EncodedTexts[] = [];
  const qs: EncodedTexts[] = [];
  const memTexts: string[] = [];
  const queryTexts: string[] = [];
  let model = '';
  let split = 0;
  let qSplit = 0;
  for (const source of ['locomo', 'longmemeval-s'] as const) {
    const want = source === 'locomo' ? Infinity : lmeMemories;
    if (want === 0) continue;
    const bank = await openBank(await bankDir(source), {
      verifyHashes: false,
      memoryTokens: 'file',
    });
    model = bank.manifest.model.sha256;
    const rows = Math.min(want, bank.memories.ids.length);
    const vectors = await readTokenRange(
      bank.memories.tokenFile,
      bank.memories.tokenOffsets[rows]!,
    );
    mem.push(encodedRows(bank.memories, vectors, rows, bank.dim));
    const q = bank.queries;
    qs.push(encodedRows(q, q.tokenVectors, q.ids.length, bank.dim));
    const loaded = await loadDataset(source, { location: dataLocationFromEnv() });
    const text = new Map(loaded.benchmark.memories.map((m) => [m.id, m.text]));
    const qText = new Map(loaded.benchmark.queries.map((m) => [m.id, m.text]));
    for (let r = 0; r < rows; r++) memTexts.push(text.get(bank.memories.ids[r]!)!);
    for (const id of q.ids) queryTexts.push(qText.get(id)!);
    if (source === 'locomo') {
      split = rows;
      qSplit = q.ids.length;
    }
  }
  return {
    memories: { model, encoded: concat(mem), texts: memTexts, split },
    queries: { model, encoded: concat(qs), texts: queryTexts, split: qSplit },
  };
}

/**
 * An embedder that returns the pools' encodings by text (passages from `memories`, queries from
 * `queries`): the store's own work is measured, the encoder's is not. A text in neither pool is
 * a programmer error.
 */
export function poolEmbedder(memories: EncodedPool | undefined, queries: EncodedPool): Embedder {
  const index = (pool: EncodedPool | undefined) =>
    new Map(pool?.texts.map((t, i) => [t, i] as const) ?? []);
  const memAt = index(memories);
  const queryAt = index(queries);
  return {
    model: queries.model,
    dim: queries.encoded.dim,
    tokenText: (id) => `#${id}`,
    dispose: () => Promise.resolve(),
    encode(batch, role) {
      const [at, pool] = role === 'query' ? [queryAt, queries] : [memAt, memories];
      const rows = batch.map((t) => {
        const r = at.get(t);
        if (r === undefined || pool === undefined)
          throw new Error(`no encoded ${role} for "${t.slice(0, 40)}"`);
        return r;
      });
      return Promise.resolve(pickRows(pool!.encoded, rows));
    },
  };
}

/** Writes rows `rows` of a query pool to `path` (JSON, arrays as base64): a child's queries. */
export async function writeQueries(path: string, pool: EncodedPool, rows: readonly number[]) {
  const e = pickRows(pool.encoded, rows);
  const b64 = (a: ArrayBufferView) =>
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
  const body = {
    model: pool.model,
    dim: e.dim,
    count: e.count,
    texts: rows.map((r) => pool.texts[r]!),
    pooled: b64(e.pooled),
    tokenOffsets: b64(e.tokenOffsets),
    tokenVectors: b64(e.tokenVectors),
    tokenIds: b64(e.tokenIds),
    tokenPositions: b64(e.tokenPositions),
    truncated: b64(e.truncated),
  };
  await writeFile(path, JSON.stringify(body));
}

/** Reads {@link writeQueries}' file back as a pool. */
export async function readQueries(path: string): Promise<EncodedPool> {
  const j = JSON.parse(await readFile(path, 'utf8')) as Record<string, string> & {
    model: string;
    dim: number;
    count: number;
    texts: string[];
  };
  const bytes = (k: string) => {
    const b = Buffer.from(j[k]!, 'base64');
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  };
  const encoded: EncodedTexts = {
    count: j.count,
    dim: j.dim,
    pooled: new Float32Array(bytes('pooled')),
    tokenOffsets: new Int32Array(bytes('tokenOffsets')),
    tokenVectors: new Float32Array(bytes('tokenVectors')),
    tokenIds: new Int32Array(bytes('tokenIds')),
    tokenPositions: new Int32Array(bytes('tokenPositions')),
    truncated: new Uint8Array(bytes('truncated')),
  };
  return { model: j.model, encoded, texts: j.texts, split: j.count };
}

/**
 * Bank sizes: bank 0 holds `latencyBank` memories (at most half of `n` when `n` is small), the
 * others share the rest, each at least one, varied deterministically (golden-ratio weights
 * 0.25–1.75).
 */
export function bankSizes(n: number, banks: number, latencyBank: number): number[] {
  if (banks === 1) return [n];
  const first = Math.min(latencyBank, Math.max(1, Math.floor(n / 2)));
  const others = Math.min(banks - 1, n - first);
  const rest = n - first;
  const w = Array.from({ length: others }, (_, j) => 0.25 + 1.5 * (((j + 1) * 0.6180339887) % 1));
  const sum = w.reduce((a, b) => a + b, 0);
  const sizes = w.map((x) => 1 + Math.floor(((rest - others) * x) / sum));
  let left = rest - sizes.reduce((a, b) => a + b, 0);
  for (let j = 0; left > 0; j = (j + 1) % others, left--) sizes[j]!++;
  return [first, ...sizes];
}

/**
 * Each memory's pool row: LongMemEval-S with probability `lmeShare`, else LoCoMo; seeded. Rows
 * whose text is over the store's default `maxTextBytes` (64 KiB; one LongMemEval-S session) are
 * drawn again.
 */
export function poolRows(n: number, pool: EncodedPool, lmeShare: number, seed: number): Int32Array {
  const rand = rng(seed);
  const lme = pool.encoded.count - pool.split;
  const fits = pool.texts.map((t) => Buffer.byteLength(t) <= 65536);
  const rows = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let r: number;
    do
      r =
        lme > 0 && rand() < lmeShare
          ? pool.split + Math.floor(rand() * lme)
          : Math.floor(rand() * pool.split);
    while (!fits[r]);
    rows[i] = r;
  }
  return rows;
}
