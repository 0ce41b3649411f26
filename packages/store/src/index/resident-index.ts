import {
  ExactTokenIndex,
  INT8_RESIDENT_MARGIN,
  OrtSimilarityKernel,
  flatTokenStore,
  type ScorePrecision,
  type SimilarityKernel,
  type TokenIndex,
  type TokenStore,
} from '@bfe/index';
import type { ResidentKernel } from './kernel-pool.js';
import type { TokenIndexFactory } from '../search/search.js';
import type { BankView } from '../types.js';
import { contiguousTokens, viewTokens } from '../view-tokens.js';
import { appendedTokens, extendedIndex, type ResidentBase } from './resident-extension.js';

/**
 * Largest bank, in content tokens, kept resident by default: one kernel chunk
 * (`DEFAULT_CHUNK_SIZE`), so a whole-bank search is one call on the resident session for queries
 * of up to 256 tokens (longer ones fall back to the ordinary path, with the same results). A
 * LoCoMo conversation holds ~22k tokens (~34 MiB of float32).
 */
export const DEFAULT_MAX_RESIDENT_TOKENS = 65_536;

/** Options of {@link residentIndexFactory}. */
export interface ResidentIndexOptions {
  /** Banks with more content tokens use the scorer's kernel, not a resident one. */
  readonly maxResidentTokens?: number;
  /** Intra-op threads of each resident kernel (default: onnxruntime's choice). */
  readonly threads?: number;
  /**
   * Makes each resident kernel (default: an `OrtSimilarityKernel` on this thread), e.g. on a
   * worker thread (`residentKernelPool`); `fallback` is the scorer's kernel.
   */
  readonly kernel?: (fallback: SimilarityKernel) => ResidentKernel;
  /**
   * The resident kernels' product: `'fp32'` (default; results identical to the scorer's
   * kernel) or `'int8'` (the bank held as int8, each query row quantised on its own; k + 32
   * proposals a row rescored in float64: approximate, measured in BENCHMARKS.md "The service").
   */
  readonly product?: ScorePrecision;
}

/** A {@link TokenIndexFactory} that owns kernels: {@link dispose} releases them. */
export interface ResidentIndexFactory extends TokenIndexFactory {
  /** Resident kernels alive now (one per cached small-bank view searched twice or more). */
  readonly resident: () => number;
  /** Resolves when the resident kernels being built are ready. */
  readonly settled: () => Promise<void>;
  /** Releases every resident kernel; later calls build them again. */
  readonly dispose: () => Promise<void>;
}

/**
 * A view grown by appends from a resident one is searched on that kernel while its appended
 * tokens are at most this share of its bank; beyond, its second search packs it anew.
 */
export const MAX_APPENDED_SHARE = 1 / 8;

/** Per (view, scorer kernel): the index searches use now, and the resident one once built. */
interface Entry {
  index: TokenIndex;
  searches: number;
  building?: Promise<void>;
  /** The kernel holding this view's bank and the array it holds, once built. */
  resident?: Omit<ResidentBase, 'view'>;
  /** Tokens appended since the resident view this one extends (undefined: none extended). */
  appended?: number;
}

/**
 * The store's default token index: the exact backend (METHOD.md §2), one index per bank view,
 * cached while the view lives. A small bank (≤ `maxResidentTokens`) also gets its own
 * onnxruntime kernel holding the bank resident (`OrtSimilarityKernel.makeResident`: packed for
 * the GEMM once, not per search). Packing costs about as much as tens of searches, and a write
 * makes a new view, so it is built in the background from a view's second search on; until it
 * is ready searches run on the scorer's kernel. A view grown by appends from the bank's latest
 * resident view (its rows first, the same states: {@link appendedTokens}) is searched on that
 * kernel at once, its appended tokens on the scorer's ({@link extendedIndex}), and packed anew
 * only once they exceed {@link MAX_APPENDED_SHARE} of its bank. The exact backend rescores its
 * proposals in float64, so results are the same on either path (tested); with `product: 'int8'`
 * the resident path proposes from int8 estimates, and its results are the same where those
 * proposals hold the float32 top-k. A view's kernel is released when the
 * view is garbage-collected, or by {@link ResidentIndexFactory.dispose}.
 *
 * @example
 * const index = residentIndexFactory();
 * await searchView(view, query, { index }, scorer); // scorer's kernel; the 2nd search packs `view`
 * await index.dispose();
 */
export function residentIndexFactory(options: ResidentIndexOptions = {}): ResidentIndexFactory {
  const maxTokens = options.maxResidentTokens ?? DEFAULT_MAX_RESIDENT_TOKENS;
  const product = options.product ?? 'fp32';
  // An int8 resident bank proposes from estimates: a wider margin, every proposal rescored.
  const scoring = product === 'int8' ? () => ({ margin: INT8_RESIDENT_MARGIN }) : undefined;
  let perView = new WeakMap<BankView, Map<SimilarityKernel, Entry>>();
  /** Per scorer kernel and bank: the latest view made resident. */
  let latest = new WeakMap<SimilarityKernel, Map<string, WeakRef<BankView>>>();
  const pending = new Set<Promise<void>>();
  const kernels = new Set<ResidentKernel>();
  const released = new FinalizationRegistry<ResidentKernel>((kernel) => {
    kernels.delete(kernel);
    void kernel.dispose();
  });
  const exact = (
    view: BankView,
    kernel: SimilarityKernel,
    tokens: TokenStore = viewTokens(view),
    resident = false,
  ): ExactTokenIndex =>
    new ExactTokenIndex(
      {
        tokens,
        tokenOffsets: view.tokenOffsets,
        ids: view.ids,
      },
      kernel,
      resident ? scoring : undefined,
    );
  const residentWorthy = (view: BankView, kernel: SimilarityKernel): boolean => {
    const tokens = view.tokenOffsets[view.ids.length] ?? 0;
    // Resident only where the scorer itself runs onnxruntime on the CPU.
    return (
      kernel instanceof OrtSimilarityKernel &&
      kernel.executionProvider === 'cpu' &&
      tokens > 0 &&
      tokens <= maxTokens
    );
  };
  const buildResident = (
    view: BankView,
    entry: Entry,
    generation: object,
    fallback: SimilarityKernel,
  ): Promise<void> => {
    const kernel =
      options.kernel?.(fallback) ??
      new OrtSimilarityKernel({
        ...(options.threads === undefined ? {} : { threads: options.threads }),
        spin: false, // idle intra-op threads sleep, as the scorer's do (store.ts)
      });
    const tokens = view.tokenOffsets[view.ids.length]!;
    // The session packs one array, and serves a chunk that is that array: a view of several
    // pieces is joined into one here, held by the kernel while it lives.
    const flat = contiguousTokens(view);
    const done = kernel
      .makeResident(flat, tokens, view.dim, product)
      .then(async () => {
        if (generation !== perView) return kernel.dispose(); // disposed meanwhile
        kernels.add(kernel);
        released.register(view, kernel, kernel);
        entry.resident = { kernel, flat };
        let banks = latest.get(fallback);
        if (banks === undefined) latest.set(fallback, (banks = new Map()));
        const before = banks.get(view.bank)?.deref();
        if (before === undefined || (view.version ?? 0) >= (before.version ?? 0)) {
          banks.set(view.bank, new WeakRef(view));
        }
        const index = exact(view, kernel, flatTokenStore(flat, view.dim), true);
        // The evidence's diagnostic bests, computed where the bank is resident (a worker).
        const bests = 'bests' in kernel ? kernel.bests?.bind(kernel) : undefined;
        entry.index = bests === undefined ? index : Object.assign(index, { bests });
      })
      // A failed build leaves the scorer's kernel in place.
      .catch(() => kernel.dispose())
      .finally(() => pending.delete(done));
    pending.add(done);
    return done;
  };
  /** `view` searched on its bank's latest resident kernel, when it extends that view. */
  const extended = (view: BankView, kernel: SimilarityKernel): Entry | undefined => {
    if (!residentWorthy(view, kernel)) return undefined;
    const base = latest.get(kernel)?.get(view.bank)?.deref();
    const resident = base && perView.get(base)?.get(kernel)?.resident;
    if (base === undefined || resident === undefined) return undefined;
    const appended = appendedTokens(base, view);
    if (appended === undefined) return undefined;
    return {
      index: extendedIndex(view, { view: base, ...resident }, scoring),
      searches: 0,
      appended,
    };
  };
  const factory = (view: BankView, kernel: SimilarityKernel): TokenIndex => {
    let byKernel = perView.get(view);
    if (byKernel === undefined) {
      byKernel = new Map();
      perView.set(view, byKernel);
    }
    let entry = byKernel.get(kernel);
    if (entry === undefined) {
      entry = extended(view, kernel) ?? { index: exact(view, kernel), searches: 0 };
      byKernel.set(kernel, entry);
    }
    entry.searches += 1;
    const tokens = view.tokenOffsets[view.ids.length]!;
    const extendedEnough =
      entry.appended !== undefined && entry.appended <= MAX_APPENDED_SHARE * tokens;
    if (
      entry.searches === 2 &&
      entry.building === undefined &&
      !extendedEnough &&
      residentWorthy(view, kernel)
    )
      entry.building = buildResident(view, entry, perView, kernel);
    return entry.index;
  };
  return Object.assign(factory, {
    resident: () => kernels.size,
    settled: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
    dispose: async () => {
      perView = new WeakMap();
      latest = new WeakMap();
      await Promise.all([...pending]);
      const all = [...kernels];
      kernels.clear();
      for (const k of all) released.unregister(k);
      for (const k of all) await k.dispose();
    },
  });
}
