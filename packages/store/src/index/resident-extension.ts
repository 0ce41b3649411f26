// A bank view grown by appends from a view whose bank is resident: the resident session serves
// the old rows, only the appended tokens are scored on the scorer's kernel.
import {
  ExactTokenIndex,
  flatTokenStore,
  type ChunkScoring,
  type SimilarityKernel,
  type TokenIndex,
} from '@bfe/index';
import type { DiagnosticBests } from '@bfe/scorer';
import type { BankView } from '../types.js';
import { PieceTokens, viewTokens } from '../view-tokens.js';

/** A view whose bank a kernel holds resident, as the array the kernel was given. */
export interface ResidentBase {
  readonly view: BankView;
  readonly kernel: SimilarityKernel & {
    bests?(queries: Float32Array, quads: Int32Array): Promise<DiagnosticBests | undefined>;
  };
  /** `[tokens × dim]` the array resident in `kernel` (the view's tokens, joined). */
  readonly flat: Float32Array;
}

/**
 * Tokens `view` holds after `base`'s, when `view` is `base` with rows appended: the same bank
 * and model, `base`'s rows its first rows — the same ids at the same versions (write sequences)
 * with the same token offsets — and their token states the very memory `base` reads (a view
 * grown from it shares its arrays). Undefined otherwise: an update or a delete since, a view
 * without versions, or states read again (a flush or a compaction re-encodes rows in the store's
 * codec, so the same version can hold other values).
 */
export function appendedTokens(base: BankView, view: BankView): number | undefined {
  if (view.bank !== base.bank || view.model !== base.model || view.dim !== base.dim) {
    return undefined;
  }
  const rows = base.ids.length;
  const a = base.seqs;
  const b = view.seqs;
  if (a === undefined || b === undefined || view.ids.length < rows) return undefined;
  for (let i = 0; i < rows; i++) {
    if (a[i] !== b[i] || base.ids[i] !== view.ids[i]) return undefined;
  }
  for (let i = 0; i <= rows; i++) {
    if (base.tokenOffsets[i] !== view.tokenOffsets[i]) return undefined;
  }
  const tokens = base.tokenOffsets[rows]!;
  if (!sameMemory(stateArrays(base), stateArrays(view), tokens * base.dim)) return undefined;
  return view.tokenOffsets[view.ids.length]! - tokens;
}

/** The arrays a view's token states are read from, in token order (undefined: unknown). */
function stateArrays(view: BankView): readonly Float32Array[] | undefined {
  if (view.tokens === undefined) return [view.tokenVectors];
  return view.tokens instanceof PieceTokens ? view.tokens.pieces : undefined;
}

/** Whether the first `floats` of runs `a` and of runs `b` are the same bytes of the same buffers. */
function sameMemory(
  a: readonly Float32Array[] | undefined,
  b: readonly Float32Array[] | undefined,
  floats: number,
): boolean {
  if (a === undefined || b === undefined) return false;
  let [i, j, ai, bj] = [0, 0, 0, 0];
  for (let left = floats; left > 0;) {
    const x = a[i];
    const y = b[j];
    if (x === undefined || y === undefined) return false;
    const n = Math.min(x.length - ai, y.length - bj, left);
    if (n > 0) {
      if (x.buffer !== y.buffer || x.byteOffset + 4 * ai !== y.byteOffset + 4 * bj) return false;
      left -= n;
      ai += n;
      bj += n;
    }
    if (ai === x.length) [i, ai] = [i + 1, 0];
    if (bj === y.length) [j, bj] = [j + 1, 0];
  }
  return true;
}

/**
 * The exact index of `view` (which {@link appendedTokens} says extends `base.view`) on
 * `base.kernel`: its token states are two pieces, the resident array (one chunk the kernel
 * serves from its packed session) and the appended tokens (scored by the kernel's fallback, the
 * scorer's). The exact backend's results do not depend on how the bank is cut into chunks, so
 * they are the view's own exact results (tested). The evidence's diagnostic bests go to the
 * resident kernel when they fall in its rows, else back to the caller. `scoring`: the resident
 * index's own (an int8 resident bank's margin). The index holds
 * `base.view`, so the resident kernel lives while an index extending it does.
 */
export function extendedIndex(
  view: BankView,
  base: ResidentBase,
  scoring?: ChunkScoring,
): TokenIndex {
  const dim = view.dim;
  const from = base.view.tokenOffsets[base.view.ids.length]!;
  const to = view.tokenOffsets[view.ids.length]!;
  const tokens =
    to === from
      ? flatTokenStore(base.flat, dim)
      : new PieceTokens([base.flat, viewTokens(view).read(from, to)], dim);
  const index = new ExactTokenIndex(
    { tokens, tokenOffsets: view.tokenOffsets, ids: view.ids },
    base.kernel,
    scoring,
  );
  holds.set(index, base.view);
  const remote = base.kernel.bests?.bind(base.kernel);
  if (remote === undefined) return index;
  const bests = (
    queries: Float32Array,
    quads: Int32Array,
  ): Promise<DiagnosticBests | undefined> => {
    for (let q = 0; 4 * q + 3 < quads.length; q++) {
      if (quads[4 * q + 3]! > from) return Promise.resolve(undefined);
    }
    return remote(queries, quads);
  };
  return Object.assign(index, { bests });
}

/** Each extended index's base view, alive while the index is. */
const holds = new WeakMap<TokenIndex, BankView>();
