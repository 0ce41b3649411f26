import {
  ExactTokenIndex,
  OrtSimilarityKernel,
  flatTokenStore,
  type SimilarityKernel,
  type TokenIndex,
} from '@bfe/index';
import type { TokenIndexFactory } from './search.js';
import type { BankView } from './types.js';

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
}

/** A {@link TokenIndexFactory} that owns kernels: {@link dispose} releases them. */
export interface ResidentIndexFactory extends TokenIndexFactory {
  /** Resident kernels alive now (one per cached small-bank view). */
  readonly resident: () => number;
  /** Releases every resident kernel; later calls build them again. */
  readonly dispose: () => Promise<void>;
}

/**
 * The store's default token index: the exact backend (METHOD.md §2), one index per bank view,
 * cached while the view lives. A small bank (≤ `maxResidentTokens`) gets its own onnxruntime
 * kernel holding the bank resident (`OrtSimilarityKernel.makeResident`: packed for the GEMM
 * once, not per search); a larger one the scorer's kernel. The exact backend rescores its
 * proposals in float64, so results equal the non-resident path's (tested). A view's kernel is
 * released when the view is garbage-collected, or by {@link ResidentIndexFactory.dispose}.
 *
 * @example
 * const index = residentIndexFactory();
 * await searchView(view, query, { index }, scorer); // the first search on `view` packs it
 * await index.dispose();
 */
export function residentIndexFactory(options: ResidentIndexOptions = {}): ResidentIndexFactory {
  const maxTokens = options.maxResidentTokens ?? DEFAULT_MAX_RESIDENT_TOKENS;
  let perView = new WeakMap<BankView, Map<SimilarityKernel, Promise<TokenIndex>>>();
  const kernels = new Set<OrtSimilarityKernel>();
  const released = new FinalizationRegistry<OrtSimilarityKernel>((kernel) => {
    kernels.delete(kernel);
    void kernel.dispose();
  });
  const exact = (view: BankView, kernel: SimilarityKernel): ExactTokenIndex =>
    new ExactTokenIndex(
      {
        tokens: flatTokenStore(view.tokenVectors, view.dim),
        tokenOffsets: view.tokenOffsets,
        ids: view.ids,
      },
      kernel,
    );
  const build = async (view: BankView, scorerKernel: SimilarityKernel): Promise<TokenIndex> => {
    const tokens = view.tokenOffsets[view.ids.length] ?? 0;
    // Resident only where the scorer itself runs onnxruntime on the CPU.
    const ort =
      scorerKernel instanceof OrtSimilarityKernel && scorerKernel.executionProvider === 'cpu';
    if (!ort || tokens === 0 || tokens > maxTokens) return exact(view, scorerKernel);
    const kernel = new OrtSimilarityKernel({
      ...(options.threads === undefined ? {} : { threads: options.threads }),
    });
    kernels.add(kernel);
    released.register(view, kernel, kernel);
    await kernel.makeResident(view.tokenVectors, tokens, view.dim);
    return exact(view, kernel);
  };
  const factory = (view: BankView, kernel: SimilarityKernel): Promise<TokenIndex> => {
    let byKernel = perView.get(view);
    if (byKernel === undefined) {
      byKernel = new Map();
      perView.set(view, byKernel);
    }
    let index = byKernel.get(kernel);
    if (index === undefined) {
      index = build(view, kernel);
      byKernel.set(kernel, index);
      // A failed build is not cached.
      index.catch(() => byKernel.delete(kernel));
    }
    return index;
  };
  return Object.assign(factory, {
    resident: () => kernels.size,
    dispose: async () => {
      const all = [...kernels];
      kernels.clear();
      perView = new WeakMap();
      for (const k of all) released.unregister(k);
      for (const k of all) await k.dispose();
    },
  });
}
