import { z } from 'zod';
import { ConfigError } from '@bfe/core';
import type { SimilarityKernel, TokenIndex } from '@bfe/index';
import type { BankGraph, GraphParams } from './graph/bank-graph.js';
import { GraphTokenIndex, type GraphSearchOutcome } from './graph/graph-search.js';
import { graphWorkerHost, localHnswMaker, type GraphHnswMaker } from './graph/graph-hnsw.js';
import { GraphKeeper, type IndexLink, type IndexedStore } from './graph/keeper.js';
import type { IvfBank } from './ivf/ivf-bank.js';
import { IvfKeeper, type IvfKeeperStats } from './ivf/ivf-keeper.js';
import { storeIvfOptionsSchema } from './ivf/ivf-options.js';
import { IvfViewIndex, type IvfSearchOutcome } from './ivf/ivf-search.js';
import {
  DEFAULT_MAX_RESIDENT_TOKENS,
  residentIndexFactory,
  type ResidentIndexFactory,
  type ResidentIndexOptions,
} from './resident-index.js';
import type { TokenIndexFactory } from '../search/search.js';
import type { BankView } from '../types.js';

/** Default of `maxGraphBytes`: 1 GiB (≈ 1.1M tokens of 384-d f16 graphs). */
export const DEFAULT_MAX_GRAPH_BYTES = 2 ** 30;

/**
 * The store's index policy, predeclared (README "Token index"): a bank view of at most
 * `maxResidentTokens` content tokens is searched exactly and resident (every LoCoMo
 * conversation); a bank of more than `hnswMinTokens` (default: the same 65,536) gets one HNSW
 * graph, built in the background at its first search (searched exactly until then) and
 * maintained on every write; `exact: true` searches every bank exactly (the store before
 * graphs). `large: 'ivf'` gives large banks a clustered residual index (`IvfTokenIndex`)
 * instead of a graph, kept the same way (README "Token index for large banks (IVF)").
 */
export const storeIndexOptionsSchema = z.strictObject({
  /** Exact search for every bank: resident up to `maxResidentTokens`, streamed above. */
  exact: z.boolean().default(false),
  maxResidentTokens: z.number().int().nonnegative().default(DEFAULT_MAX_RESIDENT_TOKENS),
  /** Banks with more content tokens than this get an HNSW graph (default `maxResidentTokens`). */
  hnswMinTokens: z.number().int().nonnegative().optional(),
  /**
   * The index of banks above the threshold: `hnsw` graphs (the default, measured against exact
   * on LoCoMo-derived banks in the store's benchmark) or `ivf` clustered residual indexes.
   */
  large: z.enum(['hnsw', 'ivf']).default('hnsw'),
  /** With `large: 'ivf'`: banks with more content tokens than this get one (default `maxResidentTokens`). */
  ivfMinTokens: z.number().int().nonnegative().optional(),
  ivf: storeIvfOptionsSchema.prefault({}),
  /** onnxruntime intra-op threads of the resident kernels. */
  threads: z.number().int().positive().optional(),
  /**
   * The resident kernels' product (`residentIndexFactory`'s `product`): `fp32` (results
   * identical to exact search) or `int8` (approximate proposals rescored in float64).
   */
  residentProduct: z.enum(['fp32', 'int8']).default('fp32'),
  hnsw: z
    .strictObject({
      M: z.number().int().positive().default(16),
      efConstruction: z.number().int().positive().default(128),
      efSearch: z.number().int().positive().default(128),
      /** The graph's vector kind; proposals are always rescored from float32. */
      kind: z.enum(['f32', 'f16', 'i8']).default('f16'),
      /** usearch threads for adds and searches. */
      threads: z.number().int().positive().default(1),
      /**
       * The graphs' usearch indexes on a worker thread (insertions never hold up the store's
       * thread); `false`: on the store's thread.
       */
      worker: z.boolean().default(true),
      /**
       * The worker thread's nice value (Linux; 0–19): above 0 it yields the CPU to the store's
       * thread and the rest of the machine, so adds keep their pace while a graph catches up.
       */
      workerNice: z.number().int().min(0).max(19).default(10),
    })
    .prefault({}),
  /**
   * Bytes of HNSW graphs held in memory (estimated per token: vector, links, header); past it
   * the least recently searched graphs are saved and dropped, and loaded again at their next
   * search (searched exactly meanwhile). One graph larger than this is still held.
   */
  maxGraphBytes: z.number().int().nonnegative().default(DEFAULT_MAX_GRAPH_BYTES),
  /** A search whose view the graph lacks more tokens of runs exactly (they are scored one by one). */
  maxMissingTokens: z.number().int().nonnegative().default(4096),
  /** A search past more tokens of later writes than this runs exactly. */
  maxForeignTokens: z.number().int().nonnegative().default(4096),
  /** A flush saves a graph once this share of its tokens changed since its last save. */
  saveFraction: z.number().min(0).max(1).default(0.25),
  /**
   * A flush starts rebuilding a graph from its bank's live rows (in the background; the old
   * graph serves meanwhile) once it removed more tokens than this share of its live ones.
   */
  compactRemoved: z.number().nonnegative().default(0.5),
});
export type StoreIndexOptions = z.input<typeof storeIndexOptionsSchema>;
export type ResolvedStoreIndexOptions = z.output<typeof storeIndexOptionsSchema>;

/** Counters of the graphs' work, for tests and the benchmark. */
export interface GraphStats {
  /** Banks with a graph now, and their tokens. */
  readonly banks: Readonly<
    Record<
      string,
      {
        readonly tokens: number;
        readonly versions: number;
        /** Tokens removed (superseded or deleted) that its graph still walks past. */
        readonly removed: number;
      }
    >
  >;
  /** Searches the graphs served, and those that ran exactly instead. */
  readonly graphSearches: number;
  readonly exactSearches: number;
  /** Per bank, how its graph was opened: `loaded` (and topped up) or the reason it was rebuilt. */
  readonly opened: Readonly<Record<string, string>>;
  /** Tokens added to graphs by top-ups and builds (not by writes). */
  readonly toppedUpTokens: number;
  /** Graph files written. */
  readonly saves: number;
  /** Graphs rebuilt from their live rows because they held many removed tokens. */
  readonly compactions: number;
  /** Graphs saved and dropped to stay within `maxGraphBytes`. */
  readonly evictions: number;
  /** Estimated bytes of the graphs held now. */
  readonly heldBytes: number;
  /** A graph dropped after a failure (the bank is searched exactly). */
  readonly failures: readonly string[];
}

/** A {@link ResidentIndexFactory} that also keeps the store's HNSW graphs (see {@link storeIndexFactory}). */
export interface StoreIndexFactory extends ResidentIndexFactory {
  readonly options: ResolvedStoreIndexOptions;
  /**
   * Binds the factory to the store that opens with it (`MemoryStore.open` calls it): one open
   * store at a time; after that store closes, another may attach.
   */
  readonly attach: (store: IndexedStore) => Promise<IndexLink>;
  /** Resolves when the graph (or IVF) builds and loads under way are done. */
  readonly graphsSettled: () => Promise<void>;
  readonly graphStats: () => GraphStats;
  /** The IVF indexes' counters (`large: 'ivf'`). */
  readonly ivfStats: () => IvfStats;
}

/** Counters of the IVF indexes' work (`large: 'ivf'`). */
export interface IvfStats extends IvfKeeperStats {
  /** Searches the IVF indexes served, and those that ran exactly instead. */
  readonly ivfSearches: number;
  readonly exactSearches: number;
}

/** Whether a token index factory is a {@link StoreIndexFactory} (the store attaches those). */
export function isStoreIndexFactory(f: TokenIndexFactory): f is StoreIndexFactory {
  return typeof (f as Partial<StoreIndexFactory>).attach === 'function';
}

/**
 * The store's default token index, with its predeclared policy (see
 * {@link storeIndexOptionsSchema}): resident exact search for banks up to 65,536 content
 * tokens, results identical to {@link residentIndexFactory}'s; one incrementally maintained
 * HNSW graph (usearch, M 16 / efConstruction 128 / efSearch 128, f16 vectors, k + 16 proposals
 * rescored in float64) for larger banks, persisted under `<store>/graphs/` as a rebuildable
 * cache. A search sees exactly its snapshot's tokens (`GraphTokenIndex`).
 * @throws {ConfigError} for bad options.
 * @example
 * const store = await MemoryStore.open(dir, { index: storeIndexFactory({ hnsw: { efSearch: 256 } }) });
 * const exactOnly = storeIndexFactory({ exact: true }); // the store before graphs
 */
export function storeIndexFactory(
  options: StoreIndexOptions = {},
  make: Pick<ResidentIndexOptions, 'kernel'> & {
    /** Where each attached store's graph indexes live (default: per `hnsw.worker`). */
    readonly graphs?: () => GraphHnswMaker;
  } = {},
): StoreIndexFactory {
  const parsed = storeIndexOptionsSchema.safeParse(options);
  if (!parsed.success) throw new ConfigError(`storeIndexFactory: ${z.prettifyError(parsed.error)}`);
  const opts = parsed.data;
  const ivf = opts.large === 'ivf';
  const minTokens = (ivf ? opts.ivfMinTokens : opts.hnswMinTokens) ?? opts.maxResidentTokens;
  const resident = residentIndexFactory({
    maxResidentTokens: opts.maxResidentTokens,
    product: opts.residentProduct,
    ...(opts.threads === undefined ? {} : { threads: opts.threads }),
    ...(make.kernel === undefined ? {} : { kernel: make.kernel }),
  });
  const { worker, workerNice, ...hnsw } = opts.hnsw;
  const params: GraphParams = hnsw;
  const counts = { graph: 0, exact: 0 };
  const count = (outcome: GraphSearchOutcome): void => void counts[outcome]++;
  const ivfCounts = { ivf: 0, exact: 0 };
  const ivfCount = (outcome: IvfSearchOutcome): void => void ivfCounts[outcome]++;
  let keeper: GraphKeeper | undefined;
  let ivfKeeper: IvfKeeper | undefined;
  let perView = new WeakMap<
    BankView,
    Map<SimilarityKernel, { over: BankGraph | IvfBank; index: TokenIndex }>
  >();
  const { centroids, residualBits, nprobe, overFetch, margin, threads, centroidProduct } = opts.ivf;
  const { probeSlack, maxProbe } = opts.ivf;
  const ivfPolicy = {
    ...opts.ivf,
    minTokens,
    ...(centroids === undefined ? {} : { centroids }),
    residualBits,
    search: {
      nprobe,
      overFetch,
      margin,
      threads,
      ...(centroidProduct === undefined ? {} : { centroidProduct }),
      ...(probeSlack === undefined ? {} : { probeSlack }),
      ...(maxProbe === undefined ? {} : { maxProbe }),
    },
  };

  /**
   * The view's index over `over` (its bank's graph or IVF index) for `kernel`: made once per view,
   * kernel and maintained structure, and again when the bank's structure is replaced.
   */
  const viewIndex = (
    view: BankView,
    kernel: SimilarityKernel,
    over: BankGraph | IvfBank,
    make: (exact: TokenIndex) => TokenIndex,
  ): TokenIndex => {
    let byKernel = perView.get(view);
    if (byKernel === undefined) perView.set(view, (byKernel = new Map()));
    const kept = byKernel.get(kernel);
    if (kept?.over === over) return kept.index;
    const index = make(resident(view, kernel) as TokenIndex);
    byKernel.set(kernel, { over, index });
    return index;
  };

  /** The IVF index of a large view's bank once it is built (else resident, exact). */
  const ivfIndex = (view: BankView, kernel: SimilarityKernel): TokenIndex | Promise<TokenIndex> => {
    const bank = ivfKeeper?.bank(view.bank, kernel);
    if (bank === undefined) return resident(view, kernel); // being built
    return viewIndex(
      view,
      kernel,
      bank,
      (exact) => new IvfViewIndex(view, bank, exact, opts.maxMissingTokens, ivfCount),
    );
  };

  const factory = (view: BankView, kernel: SimilarityKernel): TokenIndex | Promise<TokenIndex> => {
    const tokens = view.tokenOffsets[view.ids.length] ?? 0;
    if (opts.exact || view.seqs === undefined || tokens <= minTokens) return resident(view, kernel);
    if (ivf) return ivfIndex(view, kernel);
    if (keeper === undefined) return resident(view, kernel);
    const graph: BankGraph | undefined = keeper.graph(view.bank);
    if (graph === undefined) return resident(view, kernel); // being built or loaded
    return viewIndex(
      view,
      kernel,
      graph,
      (exact) =>
        new GraphTokenIndex(
          view,
          graph,
          exact,
          { maxMissing: opts.maxMissingTokens, maxForeign: opts.maxForeignTokens },
          count,
        ),
    );
  };
  return Object.assign(factory, {
    options: opts,
    resident: resident.resident,
    settled: resident.settled,
    attach: async (store: IndexedStore): Promise<IndexLink> => {
      if (
        (keeper !== undefined && !keeper.closed) ||
        (ivfKeeper !== undefined && !ivfKeeper.closed)
      )
        throw new Error('storeIndexFactory: attached to a store that is still open');
      perView = new WeakMap();
      if (ivf && !opts.exact) {
        keeper = undefined;
        return (ivfKeeper = new IvfKeeper(store, ivfPolicy));
      }
      const maker =
        make.graphs?.() ??
        (worker && !opts.exact ? graphWorkerHost({ nice: workerNice }) : localHnswMaker());
      keeper = new GraphKeeper(
        store,
        params,
        opts.saveFraction,
        minTokens,
        opts.compactRemoved,
        maker,
        opts.maxGraphBytes,
      );
      if (opts.exact) keeper.disable();
      await keeper.open();
      return keeper;
    },
    graphsSettled: async () => {
      await keeper?.settled();
      await ivfKeeper?.settled();
    },
    ivfStats: (): IvfStats => ({
      ...(ivfKeeper?.stats() ?? {
        banks: {},
        builds: 0,
        loads: 0,
        saves: 0,
        rebuilds: 0,
        failures: [],
      }),
      ivfSearches: ivfCounts.ivf,
      exactSearches: ivfCounts.exact,
    }),
    graphStats: (): GraphStats => ({
      ...(keeper?.stats() ?? {
        banks: {},
        opened: {},
        toppedUpTokens: 0,
        saves: 0,
        compactions: 0,
        evictions: 0,
        heldBytes: 0,
        failures: [],
      }),
      graphSearches: counts.graph,
      exactSearches: counts.exact,
    }),
    dispose: async () => {
      perView = new WeakMap();
      await resident.dispose();
    },
  });
}
