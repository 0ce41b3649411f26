// The layout's token ids as a file stores them: each bank token's cluster (2 bytes a token
// below 65,535 clusters), from which the ascending-within-a-cluster layout follows, or the plain
// int32 list where that is smaller or the layout is not in that order.

/** How an `ivf.bin` (version 4) stores the bank token at each layout place. */
export type PlaceIds =
  | {
      /** `assignment[t]`: bank token `t`'s cluster; `NONE` (all ones): not in the layout. */
      readonly kind: 'assignment';
      readonly assignment: Uint16Array | Int32Array;
    }
  | { readonly kind: 'list'; readonly tokens: Int32Array };

/** The bytes of an assignment entry: 2 while every cluster id and the sentinel fit 16 bits. */
export function assignmentWidth(clusters: number): 2 | 4 {
  return clusters < 0xffff ? 2 : 4;
}

/**
 * The smaller of the two forms for `tokens` laid out by `clusterOffsets`: the assignment when
 * every cluster's tokens ascend (what every build, append and compaction lays out) and one
 * entry a bank token up to the largest costs fewer bytes than 4 a place; else the list.
 */
export function encodePlaceIds(clusterOffsets: Int32Array, tokens: Int32Array): PlaceIds {
  const c = clusterOffsets.length - 1;
  const width = assignmentWidth(c);
  let universe = 0;
  for (let p = 0; p < tokens.length; p++) universe = Math.max(universe, tokens[p]! + 1);
  if (universe * width >= tokens.length * 4) return { kind: 'list', tokens };
  const assignment =
    width === 2 ? new Uint16Array(universe).fill(0xffff) : new Int32Array(universe).fill(-1);
  const none = width === 2 ? 0xffff : -1;
  for (let k = 0; k < c; k++) {
    for (let p = clusterOffsets[k]!; p < clusterOffsets[k + 1]!; p++) {
      const t = tokens[p]!;
      const ascends = p === clusterOffsets[k] || t > tokens[p - 1]!;
      if (t < 0 || !ascends || assignment[t] !== none) return { kind: 'list', tokens };
      assignment[t] = k;
    }
  }
  return { kind: 'assignment', assignment };
}

/**
 * The bank token at each layout place from an assignment: cluster `k`'s places filled with its
 * tokens in ascending order. Throws when the assignment disagrees with `clusterOffsets`.
 */
export function decodeAssignment(
  clusterOffsets: Int32Array,
  assignment: Uint16Array | Int32Array,
): Int32Array {
  const c = clusterOffsets.length - 1;
  const none = assignment instanceof Uint16Array ? 0xffff : -1;
  const next = clusterOffsets.slice(0, c);
  const tokens = new Int32Array(clusterOffsets[c]!);
  for (let t = 0; t < assignment.length; t++) {
    const k = assignment[t]!;
    if (k === none) continue;
    if (k < 0 || k >= c || next[k]! >= clusterOffsets[k + 1]!) {
      throw new Error('IVF file: the token assignment disagrees with the cluster offsets');
    }
    tokens[next[k]!++] = t;
  }
  for (let k = 0; k < c; k++) {
    if (next[k] !== clusterOffsets[k + 1]) {
      throw new Error('IVF file: the token assignment disagrees with the cluster offsets');
    }
  }
  return tokens;
}
