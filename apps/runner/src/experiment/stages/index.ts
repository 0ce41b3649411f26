import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BankSide, FileBankSide, OpenedBank } from '@bfe/encoder';
import {
  CodecExactTokenIndex,
  HnswTokenIndex,
  codecModelSchema,
  codecShape,
  encodeTokens,
  fileCodeSource,
  graphKindOf,
  trainCodec,
  type CodeSource,
  type CodecModel,
  type HnswSide,
  type SimilarityKernel,
  type TokenIndex,
} from '@bfe/index';
import { groupByCandidates } from '@bfe/scorer';
import type { ArtifactResult } from '../../cache/store.js';
import { codeVersion } from '../code-version.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from './dataset.js';
import type { EncodeStage } from './encode.js';
import { IVF_FILE, buildIvfFile, ivfKeyConfig, ivfSearch, openIvf } from './index-ivf.js';
import { milvusKeyConfig, openMilvusIndex } from './index-milvus.js';

/** The experiment's `index` section, defaults filled. */
export type IndexConfig = NonNullable<Experiment['index']>;

/** What results.json's `meta.index` records. */
export interface IndexMeta {
  readonly backend: 'exact' | 'hnsw' | 'ivf' | 'milvus';
  readonly codec: IndexConfig['codec'];
  /**
   * The HNSW graph parameters (hnsw; `overFetch`, `margin` when set), the IVF centroids, residual
   * bits and nprobe (ivf), the projection seed (rp128+sq4); else empty.
   */
  readonly params: Record<string, number>;
  /** ivf: `warp` when missing similarities are floored at WARP's estimate; left out: the tail floor. */
  readonly floor?: 'warp';
  /** The HNSW graph's vector kind, when the section sets `graph`. */
  readonly graph?: 'f32' | 'f16' | 'i8';
  readonly bytesPerToken: number;
  /**
   * Code bytes of every memory token (once), plus the codec model and the HNSW files (a token
   * in several candidate sets is in each of their graphs, so counted once per graph).
   */
  readonly totalBytes: number;
  /** hnsw: the graphs (one per candidate set) and the tokens they hold together. */
  readonly graphs?: { readonly count: number; readonly tokens: number };
  /** hnsw built on more than one thread (`buildThreads`); left out: one thread. */
  readonly buildThreads?: number;
  /** `false` with `buildThreads` > 1: the graphs are not reproducible; left out otherwise. */
  readonly deterministic?: false;
}

/** A bank either way: the index reads its memory ids, banks and token offsets only. */
type AnyBank = OpenedBank<BankSide | FileBankSide>;

/** The index stage's outcome. */
export interface IndexStage {
  /** Undefined for exact float32: the scorer's own exact search, no stage at all. */
  readonly artifact: ArtifactResult | undefined;
  readonly meta: IndexMeta;
  /** The score stage's part of the cache key. */
  readonly keyConfig: Record<string, unknown>;
  /** Opens the index on the scorer's kernel; undefined: the scorer's default exact search. */
  readonly open: (bank: AnyBank, kernel: SimilarityKernel) => Promise<OpenedIndex | undefined>;
}

/** An opened index and how to release it. */
export interface OpenedIndex {
  readonly index: TokenIndex;
  readonly dispose: () => void;
}

const CODEC_FILE = 'codec.json';
const CODES_FILE = 'codes.bin';
const HNSW_DIR = 'hnsw';

/**
 * Threads the HNSW graphs are built with when more than one (`buildThreads`); undefined: one, the
 * reproducible build.
 */
function parallelBuild(c: IndexConfig): number | undefined {
  return c.backend === 'hnsw' && c.buildThreads !== undefined && c.buildThreads > 1
    ? c.buildThreads
    : undefined;
}

/** The parts of the section that change the index (HNSW params only for hnsw, seed only for rp). */
function indexKeyConfig(c: IndexConfig, tokens: number): Record<string, unknown> {
  const threads = parallelBuild(c);
  return {
    backend: c.backend,
    codec: c.codec,
    ...(c.backend === 'ivf' ? ivfKeyConfig(c, tokens) : {}),
    ...(c.codec === 'rp128+sq4' ? { seed: c.seed } : {}),
    ...(c.backend === 'hnsw'
      ? { M: c.M, efConstruction: c.efConstruction, layout: 'candidate-sets' }
      : {}),
    // Only another kind than the codec's own: a section without `graph` (or with the codec's
    // kind written out) keeps its key.
    ...(c.backend === 'hnsw' && c.graph !== undefined && c.graph !== graphKindOf(c.codec)
      ? { graph: c.graph }
      : {}),
    // A parallel build is another artifact, and says it is not reproducible; one thread (the
    // default, or written out) keeps the key.
    ...(threads === undefined ? {} : { buildThreads: threads, deterministic: false }),
  };
}

/** The HNSW options the section sets beyond the parameters (graph kind, over-fetch, margin). */
function graphOptions(c: IndexConfig): {
  kind?: 'f32' | 'f16' | 'i8';
  overFetch?: number;
  margin?: number;
} {
  return {
    ...(c.graph === undefined ? {} : { kind: c.graph }),
    ...searchOptions(c),
  };
}

/** The search-time HNSW settings the section sets (over-fetch, margin); hnsw only. */
function searchOptions(c: IndexConfig): {
  overFetch?: number;
  margin?: number;
  nprobe?: number;
  floor?: 'warp';
} {
  if (c.backend === 'ivf') return ivfSearch(c);
  if (c.backend !== 'hnsw') return {};
  return {
    ...(c.overFetch === undefined ? {} : { overFetch: c.overFetch }),
    ...(c.margin === undefined ? {} : { margin: c.margin }),
  };
}

function metaParams(c: IndexConfig, tokens: number): Record<string, number> {
  return {
    ...(c.backend === 'ivf'
      ? (ivfKeyConfig(c, tokens) as { centroids: number; residualBits: number })
      : {}),
    ...(c.backend === 'hnsw'
      ? { M: c.M, efConstruction: c.efConstruction, efSearch: c.efSearch }
      : {}),
    ...numericSearchOptions(c),
    ...(c.codec === 'rp128+sq4' ? { seed: c.seed } : {}),
  };
}

/** {@link searchOptions} without the floor (recorded as `IndexMeta.floor`). */
function numericSearchOptions(c: IndexConfig): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(searchOptions(c))) {
    if (typeof value === 'number') out[key] = value;
  }
  return out;
}

/** `[memories]` a dense bank number per memory row (bank ids in sorted order). */
function memoryBanks(bank: AnyBank): Int32Array | undefined {
  const ids = bank.memories.bankIds;
  if (ids === undefined) return undefined;
  const numbers = new Map([...new Set(ids)].sort().map((id, i) => [id, i] as const));
  return Int32Array.from(ids, (id) => numbers.get(id)!);
}

/**
 * The distinct candidate sets of the dataset's queries (every query, whatever the split): the
 * memory rows each query is ranked among, as the score stage groups them for the tail floor
 * (`groupByCandidates`: a LoCoMo conversation, a LongMemEval haystack). Rows ascending; sets
 * ordered by their rows. Read from the queries' candidates only, never from labels.
 */
export async function candidateSets(dataset: DatasetStage, bank: AnyBank): Promise<Int32Array[]> {
  const { benchmark } = await dataset.load();
  const sets = groupByCandidates(bank.memories, benchmark.queries).map((g) =>
    Int32Array.from(g.rows).sort(),
  );
  return sets.sort((a, b) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return a.length - b.length;
  });
}

/**
 * index: the codec trained on every memory token state of the encoded bank (METHOD.md §8),
 * the memory tokens' codes, and for `hnsw` one usearch graph per candidate set
 * ({@link candidateSets}) over the decoded codes, each written as soon as it is built. The artifact
 * is `codec.json`, `codes.bin`, `hnsw/set-<i>.usearch` and `hnsw/layout.json` (the sets); its
 * key is the encode key (and the dataset's, for hnsw), the index section (the parts that
 * change it) and the code version. Exact float32 has no stage: the scorer searches the bank's
 * own vectors, as without the section. The files are reproducible: the same inputs give the
 * same bytes (graphs built on one thread, the codec's sample in a seeded hash order of token
 * identity, sets and banks in sorted order); only the manifest's timings vary. `buildThreads`
 * > 1 builds faster and is not reproducible (keyed and reported `deterministic: false`).
 */
export async function runIndexStage(
  ctx: StageContext,
  e: Experiment,
  encode: EncodeStage,
  dataset: DatasetStage,
): Promise<IndexStage | undefined> {
  const c = e.index;
  if (c === undefined) return undefined;
  // Dimension and token count from the file-backed bank: a hit never reads the token vectors.
  const { dim, memories } = await encode.fileBank();
  const tokens = memories.tokenOffsets[memories.tokenOffsets.length - 1]!;
  const bytesPerToken = codecShape(c.codec, dim).bytesPerToken;
  const keyConfig = {
    ...indexKeyConfig(c, tokens),
    ...(c.backend === 'hnsw' ? { efSearch: c.efSearch } : {}),
    ...searchOptions(c),
  };
  if (c.backend === 'milvus') {
    const url = c.milvus!;
    const meta = { backend: 'milvus', codec: 'fp32', params: {}, bytesPerToken } as const;
    return {
      artifact: undefined,
      meta: { ...meta, totalBytes: tokens * bytesPerToken },
      keyConfig: { ...keyConfig, milvus: await milvusKeyConfig(url) },
      open: async (bank, kernel) => openMilvusIndex(url, encode.artifact.key, bank, kernel),
    };
  }
  if (c.backend === 'exact' && c.codec === 'fp32') {
    const meta = { backend: 'exact', codec: 'fp32', params: {}, bytesPerToken } as const;
    return {
      artifact: undefined,
      meta: { ...meta, totalBytes: tokens * bytesPerToken },
      keyConfig,
      open: () => Promise.resolve(undefined),
    };
  }
  const params = { M: c.M, efConstruction: c.efConstruction, efSearch: c.efSearch };
  const artifact = await ctx.run(
    'index',
    {
      stage: 'index',
      version: await codeVersion(['@bfe/core', '@bfe/index'], ['experiment/stages/index.ts']),
      config: indexKeyConfig(c, tokens),
      inputs: {
        encode: encode.artifact.key,
        ...(c.backend === 'hnsw' ? { dataset: dataset.artifact.key } : {}),
      },
    },
    async (dir) => {
      const bank = await encode.bank();
      const { tokenVectors, tokenOffsets } = bank.memories;
      const n = tokenOffsets[tokenOffsets.length - 1]!;
      const t0 = performance.now();
      // Token identity (memory id, position) for a codec fit that samples: the sample is drawn
      // in a seeded hash order of it, never in file order.
      const tokens = { ids: bank.memories.ids, tokenOffsets };
      const model = trainCodec(c.codec, tokenVectors, n, bank.dim, { seed: c.seed, tokens });
      const codes = encodeTokens(model, tokenVectors, n);
      const codecSeconds = (performance.now() - t0) / 1000;
      await writeFile(join(dir, CODEC_FILE), `${JSON.stringify(model)}\n`);
      await writeFile(join(dir, CODES_FILE), codes);
      let graphSeconds = 0;
      let files: string[] = [];
      let graphTokens = 0;
      if (c.backend === 'hnsw') {
        const sets = await candidateSets(dataset, bank);
        const t1 = performance.now();
        const side = { ...hnswSide(bank, model, codes), candidateSets: sets };
        files = await HnswTokenIndex.buildFiles(join(dir, HNSW_DIR), side, params, {
          ...(c.graph === undefined ? {} : { kind: c.graph }),
          ...(parallelBuild(c) === undefined ? {} : { buildThreads: parallelBuild(c)! }),
        });
        graphSeconds = (performance.now() - t1) / 1000;
        for (const set of sets) {
          for (const m of set) graphTokens += tokenOffsets[m + 1]! - tokenOffsets[m]!;
        }
      }
      if (c.backend === 'ivf') {
        graphSeconds = await buildIvfFile(dir, c, { ...hnswSide(bank, model, codes) });
      }
      return {
        tokens: n,
        codeBytes: codes.length,
        codecSeconds,
        graphSeconds,
        hnswFiles: files,
        graphTokens,
      };
    },
  );
  const files = (artifact.manifest.meta.hnswFiles ?? []) as string[];
  let totalBytes = (await stat(join(artifact.dir, CODES_FILE))).size;
  totalBytes += (await stat(join(artifact.dir, CODEC_FILE))).size;
  for (const f of files) totalBytes += (await stat(join(artifact.dir, HNSW_DIR, f))).size;
  if (c.backend === 'ivf') totalBytes += (await stat(join(artifact.dir, IVF_FILE))).size;
  const graphs =
    c.backend === 'hnsw'
      ? { count: files.length, tokens: Number(artifact.manifest.meta.graphTokens ?? 0) }
      : undefined;
  return {
    artifact,
    meta: {
      backend: c.backend,
      codec: c.codec,
      params: metaParams(c, tokens),
      ...(c.floor === 'warp' ? { floor: 'warp' as const } : {}),
      bytesPerToken,
      totalBytes,
      ...(c.backend === 'hnsw' && c.graph !== undefined ? { graph: c.graph } : {}),
      ...(graphs === undefined ? {} : { graphs }),
      ...(parallelBuild(c) === undefined
        ? {}
        : { buildThreads: parallelBuild(c)!, deterministic: false as const }),
    },
    keyConfig,
    open: async (bank, kernel) => {
      const model = codecModelSchema.parse(
        JSON.parse(await readFile(join(artifact.dir, CODEC_FILE), 'utf8')),
      ) as CodecModel;
      // Codes are read by position, never whole (fp32: from the bank's own token file, whose
      // float32 rows are the codes); graphs are memory-mapped, a few at a time.
      const codes = codeSourceFor(bank, model, join(artifact.dir, CODES_FILE));
      const side = hnswSide(bank, model, codes);
      if (c.backend === 'exact') {
        return { index: new CodecExactTokenIndex(side, kernel), dispose: () => codes.close() };
      }
      if (c.backend === 'ivf') {
        const index = await openIvf(artifact.dir, c, side, kernel);
        return {
          index,
          dispose: () => {
            // Idle scan workers never hold the process open: ending them needs no wait.
            void index.close();
            codes.close();
          },
        };
      }
      const index = await HnswTokenIndex.load(join(artifact.dir, HNSW_DIR), side, params, {
        kernel,
        view: true,
        ...graphOptions(c),
      });
      return {
        index,
        dispose: () => {
          index.dispose();
          codes.close();
        },
      };
    },
  };
}

/**
 * The index's codes read by position: for fp32 over a float32 bank file, the bank's token file
 * itself (its rows are the fp32 codes, byte for byte); else `codes.bin`.
 */
function codeSourceFor(
  bank: AnyBank,
  model: CodecModel,
  codesFile: string,
): CodeSource & { close(): void } {
  const { memories } = bank;
  const tokens = memories.tokenOffsets[memories.tokenOffsets.length - 1]!;
  if (model.name === 'fp32' && 'tokenFile' in memories && memories.tokenFile.dtype === 'float32') {
    const { path, segments } = memories.tokenFile;
    return fileCodeSource({ path, bytesPerToken: model.bytesPerToken, segments });
  }
  return fileCodeSource({
    path: codesFile,
    bytesPerToken: model.bytesPerToken,
    segments: [{ offset: 0, rows: tokens }],
  });
}

function hnswSide(bank: AnyBank, model: CodecModel, codes: Uint8Array | CodeSource): HnswSide {
  const memoryBank = memoryBanks(bank);
  return {
    model,
    codes,
    tokenOffsets: bank.memories.tokenOffsets,
    ids: bank.memories.ids,
    ...(memoryBank === undefined ? {} : { memoryBank }),
  };
}
