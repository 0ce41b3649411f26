/**
 * Table 5's token columns, measured in one process over the run folders' own cached artifacts:
 * per row (codec × backend), token top-k recall@64 against exact fp32 search over the bank's
 * float32 states, and per-query latency (one query, all its content tokens, k 64, against its
 * own candidate memories: the whole `TokenIndex.search` call, rescoring included) p50 / p90.
 * The bank comes from the base run's encode artifact, each row's codes and graphs from its
 * index artifact, opened as the runner's score stage opens them — token states and codes read
 * by position from their files (`fileTokenStore`, `fileCodeSource`; fp32 codes are the bank's
 * own token file), graphs memory-mapped (`view`, all kept mapped) — so nothing is read whole;
 * with `inRam` (`table5.ts --in-ram`) the states and codes are read into memory and the graphs
 * loaded, as before. Latency is timed on a second pass over the queries (the first, untimed,
 * maps and pages in what each query reads) (the cache root and keys in `receipt.json`), the evaluated queries from the
 * base run's `per-query.jsonl` and their candidates from the dataset (`BFE_DATA_MIRROR`).
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { openBank, type BankSide, type FileBankSide, type OpenedBank } from '@bfe/encoder';
import {
  CodecExactTokenIndex,
  ExactTokenIndex,
  HnswTokenIndex,
  IvfTokenIndex,
  OrtSimilarityKernel,
  codecModelSchema,
  fileCodeSource,
  fileTokenStore,
  flatTokenStore,
  readCodesFile,
  type CodecModel,
  type CodeSource,
  type HnswSide,
  type TokenIndex,
  type TokenStore,
} from '@bfe/index';
import { groupByCandidates } from '@bfe/scorer';
import { z } from 'zod';

export const TOKEN_K = 64;

const receiptSchema = z.object({
  cacheRoot: z.string(),
  config: z.object({
    dataset: z.object({ name: z.string(), options: z.record(z.string(), z.unknown()).optional() }),
  }),
  stages: z.array(z.object({ name: z.string(), key: z.string() })),
});
const indexConfigSchema = z.object({
  backend: z.enum(['exact', 'hnsw', 'ivf']),
  codec: z.string(),
  params: z.record(z.string(), z.union([z.number(), z.string()])),
  graph: z.enum(['f32', 'f16', 'i8']).optional(),
});

/** One Table 5 row's token figures. */
export interface TokenFigures {
  /** Mean over the evaluated queries' content tokens of |top-64 ∩ exact fp32 top-64| / 64. */
  readonly recall: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  /** Bytes of the usearch graph files (0 without). */
  readonly graphBytes: number;
  readonly queries: number;
  readonly queryTokens: number;
  /** The bank's memory tokens and their float32 bytes (the exact fp32 row's storage). */
  readonly bankTokens: number;
  readonly fp32Bytes: number;
  /**
   * HNSW rows: recall@64 against the exact backend over the same codec (a run folder of this
   * call), the graph's own loss apart from the codec's; undefined without such a row.
   */
  readonly recallVsCodecExact?: number;
}

interface Probe {
  /** Query rows of the bank, with their candidate memory rows (ascending). */
  readonly items: { readonly row: number; readonly memories: Int32Array }[];
  /** Memory token states left in their file (`memoryTokens: 'file'`), or in memory (`inRam`). */
  readonly bank: AnyBank;
}

type AnyBank = OpenedBank<BankSide | FileBankSide>;

/** The bank's memory token states as a token store: read by position, or the in-memory ones. */
function statesOf(bank: AnyBank): TokenStore & { close(): void } {
  const m = bank.memories;
  if ('tokenFile' in m) return fileTokenStore(m.tokenFile);
  return { ...flatTokenStore(m.tokenVectors, bank.dim), close: () => {} };
}

async function receiptOf(dir: string): Promise<z.infer<typeof receiptSchema>> {
  return receiptSchema.parse(JSON.parse(await readFile(join(dir, 'receipt.json'), 'utf8')));
}

const stageDir = (r: z.infer<typeof receiptSchema>, stage: string): string | undefined => {
  const key = r.stages.find((s) => s.name === stage)?.key;
  return key === undefined ? undefined : join(r.cacheRoot, 'objects', stage, key);
};

/** The evaluated queries (with content tokens) of the base run and their candidates. */
async function probe(baseDir: string, inRam = false): Promise<Probe> {
  const receipt = await receiptOf(baseDir);
  const dir = join(stageDir(receipt, 'encode')!, 'bank');
  const bank: AnyBank = inRam
    ? await openBank(dir, { verifyHashes: false })
    : await openBank(dir, { verifyHashes: false, memoryTokens: 'file' });
  const ids = new Set<string>();
  for (const line of (await readFile(join(baseDir, 'per-query.jsonl'), 'utf8')).split('\n')) {
    if (line.trim() === '') continue;
    const parsed = z.object({ system: z.string(), queryId: z.string() }).parse(JSON.parse(line));
    if (parsed.system === 'sparse-fusion') ids.add(parsed.queryId);
  }
  const { name, options } = receipt.config.dataset;
  const loaded = await loadDataset(name, {
    location: dataLocationFromEnv(),
    options: options ?? {},
  });
  const queries = loaded.benchmark.queries.filter((q) => ids.has(q.id));
  const queryRow = new Map(bank.queries.ids.map((id, r) => [id, r] as const));
  const offsets = bank.queries.tokenOffsets;
  const items: Probe['items'][number][] = [];
  for (const group of groupByCandidates(bank.memories, queries)) {
    const memories = Int32Array.from(group.rows).sort();
    for (const q of group.queries) {
      const row = queryRow.get(q.id);
      if (row === undefined) throw new Error(`query ${q.id} is not in the bank`);
      if (offsets[row + 1]! > offsets[row]!) items.push({ row, memories });
    }
  }
  return { items, bank };
}

/** A dense bank number per memory row (bank ids in sorted order), as the index stage does. */
function memoryBanks(bank: AnyBank): Int32Array | undefined {
  const ids = bank.memories.bankIds;
  if (ids === undefined) return undefined;
  const numbers = new Map([...new Set(ids)].sort().map((id, i) => [id, i] as const));
  return Int32Array.from(ids, (id) => numbers.get(id)!);
}

/** Opens a run's index from its index artifact, as the experiment's index stage does. */
async function openRunIndex(
  runDir: string,
  bank: AnyBank,
  kernel: OrtSimilarityKernel,
  inRam: boolean,
): Promise<{ index: TokenIndex; graphBytes: number; name: string; close: () => void }> {
  const results = JSON.parse(await readFile(join(runDir, 'results.json'), 'utf8')) as {
    runs: { results: { meta: { index?: unknown } } }[];
  };
  const raw = results.runs[0]?.results.meta.index;
  const c = raw === undefined ? undefined : indexConfigSchema.parse(raw);
  const { memories } = bank;
  if (c === undefined || (c.backend === 'exact' && c.codec === 'fp32')) {
    const tokens = statesOf(bank);
    const side = { tokens, tokenOffsets: memories.tokenOffsets, ids: memories.ids };
    const index = new ExactTokenIndex(side, kernel);
    return { index, graphBytes: 0, name: 'fp32 exact', close: () => tokens.close() };
  }
  const dir = stageDir(await receiptOf(runDir), 'index');
  if (dir === undefined) throw new Error(`${runDir}: no index stage in the receipt`);
  const model = codecModelSchema.parse(
    JSON.parse(await readFile(join(dir, 'codec.json'), 'utf8')),
  ) as CodecModel;
  const { codes, close } = await codesOf(bank, model, join(dir, 'codes.bin'));
  const memoryBank = memoryBanks(bank);
  const side: HnswSide = {
    model,
    codes,
    tokenOffsets: memories.tokenOffsets,
    ids: memories.ids,
    ...(memoryBank === undefined ? {} : { memoryBank }),
  };
  if (c.backend === 'exact')
    return {
      index: new CodecExactTokenIndex(side, kernel),
      graphBytes: 0,
      name: `${c.codec} exact`,
      close,
    };
  const num = (name: string): number | undefined => {
    const v = c.params[name];
    return typeof v === 'number' ? v : undefined;
  };
  const over = num('overFetch');
  if (c.backend === 'ivf') {
    // `ivf.bin` read by position, searched as the experiment's index stage searches it; its
    // bytes (centroids, buckets, layout and residual codes) in the graph column.
    const file = join(dir, 'ivf.bin');
    const index = await IvfTokenIndex.open(file, side, kernel, {
      nprobe: num('nprobe')!,
      ...(over === undefined ? {} : { overFetch: over }),
    });
    return {
      index,
      graphBytes: (await stat(file)).size,
      name: `${c.codec} ivf`,
      close: () => {
        void index.close();
        close();
      },
    };
  }
  const params = {
    M: num('M')!,
    efConstruction: num('efConstruction')!,
    efSearch: num('efSearch')!,
  };
  // The run's graph kind and over-fetch, as the experiment's index stage opens it; graphs
  // memory-mapped.
  const files = (await readdir(join(dir, 'hnsw'))).filter((f) => f.endsWith('.usearch'));
  const index = await HnswTokenIndex.load(join(dir, 'hnsw'), side, params, {
    kernel,
    ...(inRam ? {} : { view: true, openGraphs: files.length }),
    ...(c.graph === undefined ? {} : { kind: c.graph }),
    ...(over === undefined ? {} : { overFetch: over }),
  });
  let graphBytes = 0;
  for (const f of files) graphBytes += (await stat(join(dir, 'hnsw', f))).size;
  return {
    index,
    graphBytes,
    name: `${c.codec} hnsw${c.graph === undefined ? '' : ` ${c.graph}`}`,
    close,
  };
}

/**
 * A run's codes: read by position (fp32 over a float32 bank file: the bank's own token file,
 * whose rows are the fp32 codes byte for byte, as the runner's index stage reads them; else
 * `codes.bin`), or in memory for an in-memory bank (fp32: a view of its states).
 */
async function codesOf(
  bank: AnyBank,
  model: CodecModel,
  codesFile: string,
): Promise<{ codes: Uint8Array | CodeSource; close: () => void }> {
  const m = bank.memories;
  const { bytesPerToken } = model;
  if (!('tokenFile' in m)) {
    const v = m.tokenVectors;
    const codes =
      model.name === 'fp32'
        ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
        : await readCodesFile(codesFile);
    return { codes, close: () => {} };
  }
  const file = m.tokenFile;
  const source =
    model.name === 'fp32' && file.dtype === 'float32'
      ? fileCodeSource({ path: file.path, bytesPerToken, segments: file.segments })
      : fileCodeSource({
          path: codesFile,
          bytesPerToken,
          segments: [{ offset: 0, rows: m.tokenOwner.length }],
        });
  return { codes: source, close: () => source.close() };
}

/** Mean over query tokens of |a's top-k ∩ b's top-k| / k; `ks[i]`: query i's k (clamped). */
function overlap(a: Int32Array[], b: Int32Array[], ks: readonly number[]): number {
  let sum = 0;
  let tokens = 0;
  for (let i = 0; i < ks.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.length !== y.length) throw new Error('rows searched with different k');
    const k = ks[i]!;
    for (let r = 0; r < x.length / k; r++) {
      const want = new Set(y.subarray(r * k, (r + 1) * k));
      let hit = 0;
      for (const t of x.subarray(r * k, (r + 1) * k)) if (want.has(t)) hit++;
      sum += hit / k;
      tokens++;
    }
  }
  return sum / tokens;
}

const quantile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

/**
 * Measures every run folder (the first: the base run, whose bank, queries and exact fp32
 * search are the reference) and returns one {@link TokenFigures} per folder, in order.
 */
export async function measureTokenColumns(
  runDirs: readonly string[],
  options: {
    readonly threads?: number;
    readonly log?: (line: string) => void;
    /** States and codes read into memory, graphs loaded (default: by position, mapped). */
    readonly inRam?: boolean;
  } = {},
): Promise<TokenFigures[]> {
  const inRam = options.inRam === true;
  const { items, bank } = await probe(runDirs[0]!, inRam);
  const kernel = new OrtSimilarityKernel(
    options.threads === undefined ? {} : { threads: options.threads },
  );
  const dim = bank.dim;
  const qv = bank.queries.tokenVectors;
  const qo = bank.queries.tokenOffsets;
  const search = (index: TokenIndex, row: number, memories: Int32Array) => {
    const rows = qo[row + 1]! - qo[row]!;
    return index.search(qv.subarray(qo[row]! * dim, qo[row + 1]! * dim), rows, TOKEN_K, {
      memories,
      clampK: true,
    });
  };
  try {
    const states = statesOf(bank);
    const exact = new ExactTokenIndex(
      { tokens: states, tokenOffsets: bank.memories.tokenOffsets, ids: bank.memories.ids },
      kernel,
    );
    const reference: Int32Array[] = [];
    const refK: number[] = [];
    try {
      for (const it of items) {
        const hits = await search(exact, it.row, it.memories);
        reference.push(hits.tokens);
        refK.push(hits.k);
      }
    } finally {
      states.close();
    }
    const out: TokenFigures[] = [];
    const names: string[] = [];
    const kept: Int32Array[][] = [];
    for (const dir of runDirs) {
      const { index, graphBytes, name, close } = await openRunIndex(dir, bank, kernel, inRam);
      const found: Int32Array[] = [];
      names.push(name);
      kept.push(found);
      try {
        // Warm-up, untimed: every query once (maps and pages in each candidate set's graph).
        for (const it of items) await search(index, it.row, it.memories);
        const times: number[] = [];
        let sum = 0;
        let tokens = 0;
        for (let i = 0; i < items.length; i++) {
          const it = items[i]!;
          const t0 = performance.now();
          const hits = await search(index, it.row, it.memories);
          times.push(performance.now() - t0);
          found.push(hits.tokens);
          const k = refK[i]!;
          const ref = reference[i]!;
          for (let r = 0; r < hits.rows; r++) {
            const want = new Set(ref.subarray(r * k, (r + 1) * k));
            let found = 0;
            for (const t of hits.tokens.subarray(r * hits.k, (r + 1) * hits.k))
              if (want.has(t)) found++;
            sum += found / k;
            tokens++;
          }
        }
        times.sort((a, b) => a - b);
        const figures = {
          recall: sum / tokens,
          p50Ms: quantile(times, 0.5),
          p90Ms: quantile(times, 0.9),
          graphBytes,
          queries: items.length,
          queryTokens: tokens,
          bankTokens: bank.memories.tokenOffsets[bank.memories.tokenOffsets.length - 1]!,
          fp32Bytes: bank.memories.tokenOwner.length * dim * 4,
        };
        options.log?.(`${dir}: ${JSON.stringify(figures)}`);
        out.push(figures);
      } finally {
        (index as { dispose?: () => void }).dispose?.();
        close();
      }
    }
    return out.map((figures, i) => {
      const codec = / hnsw( \S+)?$/.test(names[i]!) ? names[i]!.replace(/ hnsw.*$/, '') : '';
      const j = names.indexOf(`${codec} exact`);
      if (codec === '' || j < 0) return figures;
      return { ...figures, recallVsCodecExact: overlap(kept[i]!, kept[j]!, refK) };
    });
  } finally {
    kernel.dispose();
  }
}
