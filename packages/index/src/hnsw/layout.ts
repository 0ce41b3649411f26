import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * Which tokens go into which HNSW graph of an {@link HnswTokenIndex}, and which graphs a search
 * over a set of candidate memories reads.
 */

/** The memory side's layout inputs (a part of `HnswSide`). */
export interface GraphLayoutSide {
  /** `[memories + 1]` token offsets per memory row. */
  readonly tokenOffsets: ArrayLike<number>;
  /** `[memories]` each memory row's bank: one graph per bank (when no `candidateSets`). */
  readonly memoryBank?: Int32Array;
  /** Memory rows (ascending) of each candidate set: one graph per set (they may overlap). */
  readonly candidateSets?: readonly Int32Array[];
}

/** One graph: the memory rows it holds and, per graph key, the bank token it stands for. */
export interface GraphGroup {
  /** The usearch file name in the index folder. */
  readonly file: string;
  /** Memory rows, ascending and distinct (memories without tokens included). */
  readonly memories: Int32Array;
  /** Graph key → bank token index (ascending): key `j` is token `tokens[j]`. */
  readonly tokens: Int32Array;
}

/** Which graphs a search reads: whole (`filtered` false) or with the candidates as a filter. */
export interface GraphChoice {
  readonly groups: readonly number[];
  readonly filtered: boolean;
}

/**
 * The graphs of a side: one per candidate set (`set-<i>.usearch`, in the given order) when
 * `candidateSets` is given, else one per bank (`bank-<n>.usearch`, banks ascending) with
 * `memoryBank`, else one over every memory (`all.usearch`). Graphs without tokens are left out.
 * A token in several candidate sets is in each of their graphs (its vector stored once per
 * graph); its codes are stored once.
 */
export function graphGroups(side: GraphLayoutSide): GraphGroup[] {
  const offsets = side.tokenOffsets;
  const count = offsets.length - 1;
  let sets: { file: string; memories: Int32Array }[];
  if (side.candidateSets !== undefined) {
    sets = side.candidateSets.map((s, i) => ({ file: `set-${i}.usearch`, memories: checked(s) }));
  } else if (side.memoryBank !== undefined) {
    const lists = new Map<number, number[]>();
    side.memoryBank.forEach((b, m) => {
      const list = lists.get(b);
      if (list === undefined) lists.set(b, [m]);
      else list.push(m);
    });
    sets = [...lists.keys()]
      .sort((x, y) => x - y)
      .map((b) => ({ file: `bank-${b}.usearch`, memories: Int32Array.from(lists.get(b)!) }));
  } else {
    sets = [{ file: 'all.usearch', memories: Int32Array.from({ length: count }, (_, m) => m) }];
  }
  const out: GraphGroup[] = [];
  for (const { file, memories } of sets) {
    for (const m of memories) {
      if (m < 0 || m >= count) throw new Error(`${file}: memory row ${m} is not in the bank`);
    }
    const tokens = tokensOf(offsets, memories);
    if (tokens.length > 0) out.push({ file, memories, tokens });
  }
  return out;
}

function checked(set: Int32Array): Int32Array {
  for (let i = 1; i < set.length; i++) {
    if (set[i]! <= set[i - 1]!) throw new Error('a candidate set must be ascending and distinct');
  }
  return set;
}

/** The bank tokens of `memories` (ascending rows), ascending. */
export function tokensOf(offsets: ArrayLike<number>, memories: Int32Array): Int32Array {
  let n = 0;
  for (const m of memories) n += offsets[m + 1]! - offsets[m]!;
  const out = new Int32Array(n);
  let w = 0;
  for (const m of memories) for (let t = offsets[m]!; t < offsets[m + 1]!; t++) out[w++] = t;
  return out;
}

/** FNV-1a over the rows and their count. */
function hashRows(rows: Int32Array): number {
  let h = 0x811c9dc5 ^ rows.length;
  for (const r of rows) h = Math.imul(h ^ r, 0x01000193);
  return h >>> 0;
}

function equalRows(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Chooses the graphs a search over candidate memories (ascending, distinct) reads, in order:
 * 1. a graph whose memories equal the candidates: that graph alone, no filter (a LongMemEval
 *    haystack, a LoCoMo conversation, the one graph over every memory);
 * 2. graphs that do not overlap (the per-bank layout) whose union is the candidates' tokens:
 *    each of them whole (several conversations; every memory);
 * 3. the smallest graph holding every candidate memory that has tokens: that graph, with the
 *    candidates as a filter (a part of a haystack);
 * 4. else undefined: the caller searches one graph over every token with the filter.
 */
export class GraphChooser {
  readonly #groups: readonly GraphGroup[];
  readonly #byHash = new Map<number, number[]>();
  /** Memory row → the groups holding it. */
  readonly #memberOf: (number[] | undefined)[];
  /** Per group, how many of its memories have tokens. */
  readonly #withTokens: Int32Array;
  readonly #offsets: ArrayLike<number>;
  readonly #disjoint: boolean;

  constructor(groups: readonly GraphGroup[], offsets: ArrayLike<number>) {
    this.#groups = groups;
    this.#offsets = offsets;
    this.#memberOf = new Array<number[] | undefined>(offsets.length - 1);
    this.#withTokens = new Int32Array(groups.length);
    let disjoint = true;
    groups.forEach((g, i) => {
      const h = hashRows(g.memories);
      const same = this.#byHash.get(h);
      if (same === undefined) this.#byHash.set(h, [i]);
      else same.push(i);
      for (const m of g.memories) {
        if (!this.#hasTokens(m)) continue;
        this.#withTokens[i]!++;
        const list = this.#memberOf[m];
        if (list === undefined) this.#memberOf[m] = [i];
        else {
          list.push(i);
          disjoint = false;
        }
      }
    });
    this.#disjoint = disjoint;
  }

  #hasTokens(m: number): boolean {
    return this.#offsets[m + 1]! > this.#offsets[m]!;
  }

  choose(memories: Int32Array): GraphChoice | undefined {
    for (const i of this.#byHash.get(hashRows(memories)) ?? []) {
      if (equalRows(this.#groups[i]!.memories, memories)) return { groups: [i], filtered: false };
    }
    const counts = new Map<number, number>();
    let first = -1;
    let covered = true;
    for (const m of memories) {
      if (!this.#hasTokens(m)) continue;
      const holders = this.#memberOf[m];
      if (holders === undefined) {
        covered = false;
        break;
      }
      if (first < 0) first = m;
      for (const g of holders) counts.set(g, (counts.get(g) ?? 0) + 1);
    }
    if (!covered || first < 0) return undefined;
    if (this.#disjoint && [...counts].every(([g, c]) => c === this.#withTokens[g])) {
      return { groups: [...counts.keys()].sort((a, b) => a - b), filtered: false };
    }
    // Every candidate with tokens counted once per group holding it: a group holds them all
    // when its count equals the number of candidates with tokens.
    let need = 0;
    for (const m of memories) if (this.#hasTokens(m)) need++;
    let best = -1;
    for (const g of this.#memberOf[first]!) {
      if (counts.get(g) !== need) continue;
      if (best < 0 || this.#groups[g]!.tokens.length < this.#groups[best]!.tokens.length) best = g;
    }
    return best < 0 ? undefined : { groups: [best], filtered: true };
  }
}

/** The file beside the graphs that records the candidate sets they were built for. */
export const LAYOUT_FILE = 'layout.json';

const layoutFileSchema = z
  .object({ candidateSets: z.array(z.array(z.number().int().nonnegative())) })
  .strict();

/** Writes {@link LAYOUT_FILE} into `dir` (graphs built per candidate set). */
export async function writeLayout(dir: string, sets: readonly Int32Array[]): Promise<void> {
  const body = { candidateSets: sets.map((s) => Array.from(s)) };
  await writeFile(join(dir, LAYOUT_FILE), `${JSON.stringify(body)}\n`);
}

/** The candidate sets {@link writeLayout} recorded in `dir`; undefined without the file. */
export async function readLayout(dir: string): Promise<Int32Array[] | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, LAYOUT_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return layoutFileSchema.parse(JSON.parse(text)).candidateSets.map((s) => Int32Array.from(s));
}
