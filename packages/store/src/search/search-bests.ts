import type { TokenIndex } from '@bfe/index';
import { missingBests, type DiagnosticBests, type QueryScores } from '@bfe/scorer';

/**
 * A token index that can also compute the evidence's diagnostic bests where its bank lives
 * (`missingBests` quadruples; `residentIndexFactory` over `residentKernelPool`): they then leave
 * the caller's thread. Undefined back: the caller computes them.
 */
export interface BestsIndex extends TokenIndex {
  bests(queries: Float32Array, quads: Int32Array): Promise<DiagnosticBests | undefined>;
}

/** The diagnostic bests the evidence needs, from an index that computes them where it lives. */
export async function remoteBests(
  index: TokenIndex | undefined,
  scores: QueryScores,
  memories: { readonly tokenOffsets: ArrayLike<number> },
  queryTokens: Float32Array,
  top: readonly number[],
): Promise<DiagnosticBests | undefined> {
  const remote = (index as Partial<BestsIndex> | undefined)?.bests;
  if (remote === undefined) return undefined;
  const quads = missingBests(scores, memories, top);
  if (quads.length === 0) return undefined;
  const got = await remote.call(index, queryTokens, quads);
  if (got === undefined) return undefined;
  const slots = top.length * scores.nQueryTokens;
  const token = new Int32Array(slots).fill(-1);
  const similarity = new Float64Array(slots);
  for (let q = 0; 4 * q < quads.length; q++) {
    token[quads[4 * q]!] = got.token[q]!;
    similarity[quads[4 * q]!] = got.similarity[q]!;
  }
  return { token, similarity };
}
