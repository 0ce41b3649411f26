import {
  IvfTokenIndex,
  trainCodec,
  type CodecModel,
  type CodecSide,
  type IvfSearchOptions,
  type SimilarityKernel,
} from '@bfe/index';
import type { RowRef } from '../../log/live-rows.js';
import type { IvfSnapshot, SavedRow } from './ivf-files.js';

/** One row version in a bank's IVF index: its tokens are index tokens `first..first+count-1`. */
export interface IvfEntry {
  readonly id: string;
  readonly seq: number;
  /** The index's memory row (write order: rows are never renumbered). */
  readonly row: number;
  readonly first: number;
  readonly count: number;
  /** Deleted or superseded: tombstoned in the index, never proposed again. */
  dead: boolean;
}

/** How a bank's index is trained and searched. */
export interface IvfBankParams {
  /** k-means centroids; left out, {@link ivfCentroids} of the bank's tokens. */
  readonly centroids?: number | undefined;
  readonly residualBits: 2 | 4;
  readonly search: IvfSearchOptions;
}

/**
 * Default centroids for `tokens` tokens: `4·√N` rounded to a power of two (at most one per 16
 * tokens). A search scores `C` centroids and scans about `nprobe · N / C` tokens; at the default
 * nprobe 16 the two costs balance at `C = √(16·N) = 4·√N` (LongMemEval-S's 1.84M tokens: 4,096,
 * the experiment's setting; WARP's `16·√N` would spend more on centroids than the scan saves).
 * @example
 * ivfCentroids(65_536); // 1024
 */
export function ivfCentroids(tokens: number): number {
  const rule = 2 ** Math.round(Math.log2(4 * Math.sqrt(Math.max(tokens, 1))));
  const cap = 2 ** Math.floor(Math.log2(Math.max(tokens / 16, 1)));
  return Math.max(1, Math.min(rule, cap));
}

/** A row version's tokens from its store batch or segment. */
function rowVectors(ref: RowRef, dim: number): Float32Array {
  const e = ref.source.encoded;
  const o = e.tokenOffsets;
  return e.tokenVectors.subarray(o[ref.row]! * dim, o[ref.row + 1]! * dim);
}

/**
 * One large bank's clustered residual index (`IvfTokenIndex`, fp32 codes) over row versions in
 * write order: a version's tokens are appended once (`append`: new rows after the old ones, so
 * the index's rows are ascending write sequences), a deleted or superseded version is
 * tombstoned (`delete`), and {@link compact} lays the index out again (re-clustering past the
 * drift threshold). What the index holds ({@link entryOfSeq}, {@link version}) is recorded in
 * the same synchronous step that hands the change to the index, whose searches and changes
 * run in call order: a search reads the bookkeeping and calls the index in one step, so the
 * index it runs on holds exactly what it read.
 * @example
 * const bank = await IvfBank.build('b', 384, refs, { residualBits: 4, search: { nprobe: 16 } }, kernel);
 * await bank.append(newRefs); // written after every row it holds
 * await bank.kill(['m3']);
 */
export class IvfBank {
  readonly #bySeq = new Map<number, IvfEntry>();
  /** Each id's entry that is not dead. */
  readonly #live = new Map<string, IvfEntry>();
  #rows = 0;
  #tokens = 0;
  #offsets: Int32Array;
  #codes: Float32Array;
  #maxSeq = Number.NEGATIVE_INFINITY;
  #deadTokens = 0;
  /** Tokens tombstoned since the index was last laid out. */
  #stonedTokens = 0;
  /** Bumped by every change the bookkeeping records. */
  version = 0;
  appendedTokens = 0;
  compactions = 0;
  reclusters = 0;
  /** A compaction runs (searches run exactly rather than wait for it). */
  busy = false;
  disposed = false;

  private constructor(
    readonly bank: string,
    readonly dim: number,
    readonly model: CodecModel,
    readonly index: IvfTokenIndex,
    readonly centroids: number,
    readonly residualBits: 2 | 4,
    rows: readonly { readonly id: string; readonly seq: number; readonly dead?: boolean }[],
    codes: Float32Array,
    offsets: Int32Array,
  ) {
    this.#codes = codes;
    this.#offsets = offsets;
    this.#tokens = offsets[rows.length]!;
    for (const row of rows) {
      const e = this.#record(row.id, row.seq, offsets);
      if (row.dead === true) {
        // Tombstoned in the index it was saved from, and dropped from its layout.
        e.dead = true;
        this.#live.delete(row.id);
        this.#deadTokens += e.count;
      }
    }
  }

  /** Trains an index over `refs` (ascending write sequence). */
  static async build(
    bank: string,
    dim: number,
    refs: readonly RowRef[],
    params: IvfBankParams,
    kernel: SimilarityKernel,
  ): Promise<IvfBank> {
    const offsets = new Int32Array(refs.length + 1);
    for (let i = 0; i < refs.length; i++) {
      const o = refs[i]!.source.encoded.tokenOffsets;
      offsets[i + 1] = offsets[i]! + o[refs[i]!.row + 1]! - o[refs[i]!.row]!;
    }
    const tokens = offsets[refs.length]!;
    const codes = new Float32Array(tokens * dim);
    for (let i = 0; i < refs.length; i++) codes.set(rowVectors(refs[i]!, dim), offsets[i]! * dim);
    const model = trainCodec('fp32', codes, 0, dim);
    const centroids = params.centroids ?? ivfCentroids(tokens);
    const side = sideOf(model, codes, offsets, refs.length, tokens, dim);
    const train = { centroids, residualBits: params.residualBits };
    const index = await IvfTokenIndex.build(side, train, kernel, params.search);
    const bits = params.residualBits;
    const rows = refs.map((ref) => ({ id: ref.source.ids[ref.row]!, seq: ref.seq }));
    return new IvfBank(bank, dim, model, index, centroids, bits, rows, codes, offsets);
  }

  /**
   * The index saved at `path` ({@link snapshot}'s bytes) over its `rows`, read by position: each
   * row that is not tombstoned takes its vectors from the store's live version of the same
   * write sequence (`live`); a row whose version is gone gets zeros (the caller tombstones it
   * before any search). Undefined when a version differs from the saved row (id or token count).
   */
  static restore(
    bank: string,
    dim: number,
    path: string,
    saved: { readonly rows: readonly SavedRow[]; readonly centroids: number },
    live: ReadonlyMap<number, RowRef>,
    params: IvfBankParams,
    kernel: SimilarityKernel,
  ): IvfBank | undefined {
    const { rows } = saved;
    const offsets = new Int32Array(rows.length + 1);
    rows.forEach((r, i) => (offsets[i + 1] = offsets[i]! + r.count));
    const tokens = offsets[rows.length]!;
    const codes = new Float32Array(tokens * dim);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      const ref = r.dead ? undefined : live.get(r.seq);
      if (ref === undefined) continue;
      const v = rowVectors(ref, dim);
      if (ref.source.ids[ref.row] !== r.id || v.length !== r.count * dim) return undefined;
      codes.set(v, offsets[i]! * dim);
    }
    const model = trainCodec('fp32', codes, 0, dim);
    const side = sideOf(model, codes, offsets, rows.length, tokens, dim);
    const index = IvfTokenIndex.open(path, side, kernel, params.search);
    const bits = params.residualBits;
    return new IvfBank(bank, dim, model, index, saved.centroids, bits, rows, codes, offsets);
  }

  /**
   * What {@link saveIvf} writes: the index's bytes and its rows in order (tombstoned ones
   * marked). Only for an index laid out (no tails, no pending deletions): just built or compacted.
   */
  snapshot(): IvfSnapshot {
    const rows: SavedRow[] = [];
    for (const e of [...this.#bySeq.values()].sort((a, b) => a.row - b.row))
      rows.push({ id: e.id, seq: e.seq, count: e.count, dead: e.dead });
    const { bank, dim, residualBits } = this;
    const centroids = this.index.data.clusterOffsets.length - 1;
    return { bank, dim, residualBits, centroids, bytes: this.index.toBytes(), rows };
  }

  /** The entry of the row version with write sequence `seq`, dead or not. */
  entryOfSeq(seq: number): IvfEntry | undefined {
    return this.#bySeq.get(seq);
  }
  /** The largest write sequence appended: rows at or below it that it lacks are not live. */
  get maxSeq(): number {
    return this.#maxSeq;
  }
  /** The index's rows and tokens, dead ones included. */
  get rows(): number {
    return this.#rows;
  }
  get tokens(): number {
    return this.#tokens;
  }
  get liveTokens(): number {
    return this.#tokens - this.#deadTokens;
  }
  get liveVersions(): number {
    return this.#live.size;
  }
  get deadTokens(): number {
    return this.#deadTokens;
  }
  /** Tokens appended or tombstoned since the last layout (tails scanned, dead ones filtered). */
  get unlaidTokens(): number {
    return this.index.tailTokens + this.#stonedTokens;
  }
  /** `[rows + 1]` the index's token offsets now. */
  get tokenOffsets(): Int32Array {
    return this.#offsets.subarray(0, this.#rows + 1);
  }
  /** Bytes held: the fp32 codes (the index's rescoring side) and the residual codes. */
  get heldBytes(): number {
    return this.#codes.byteLength + this.#tokens * ((this.dim * this.residualBits) / 8 + 4);
  }

  /** The live entry of `id`, if any. */
  liveEntry(id: string): IvfEntry | undefined {
    return this.#live.get(id);
  }

  /** The live entries (for a catch-up against the store's live rows). */
  liveEntries(): IvfEntry[] {
    return [...this.#live.values()];
  }

  /**
   * Appends row versions written after every one the index holds (ascending sequence), their
   * tokens assigned to the index's centroids and added to the clusters' tails.
   */
  append(refs: readonly RowRef[]): Promise<unknown> {
    if (refs.length === 0) return Promise.resolve();
    const { dim } = this;
    let tokens = this.#tokens;
    const rows = this.#rows + refs.length;
    for (const ref of refs) {
      const o = ref.source.encoded.tokenOffsets;
      tokens += o[ref.row + 1]! - o[ref.row]!;
    }
    if (this.#offsets.length < rows + 1) this.#offsets = grown(this.#offsets, rows + 1);
    if (this.#codes.length < tokens * dim) this.#codes = grown(this.#codes, tokens * dim);
    const offsets = this.#offsets;
    for (const ref of refs) {
      if (ref.seq <= this.#maxSeq) throw new Error(`IvfBank: ${ref.seq} is not after the index`);
      const r = this.#rows;
      const v = rowVectors(ref, dim);
      this.#codes.set(v, offsets[r]! * dim);
      offsets[r + 1] = offsets[r]! + v.length / dim;
      this.#record(ref.source.ids[ref.row]!, ref.seq, offsets);
    }
    this.appendedTokens += tokens - this.#tokens;
    this.#tokens = tokens;
    this.version++;
    return this.index.append(sideOf(this.model, this.#codes, offsets, rows, tokens, dim));
  }

  /** Tombstones the live versions of `ids` (deleted, or superseded by an update). */
  kill(ids: readonly string[]): Promise<unknown> {
    const rows: number[] = [];
    for (const id of ids) {
      const e = this.#live.get(id);
      if (e === undefined) continue;
      e.dead = true;
      this.#live.delete(id);
      this.#deadTokens += e.count;
      this.#stonedTokens += e.count;
      rows.push(e.row);
    }
    if (rows.length === 0) return Promise.resolve();
    this.version++;
    return this.index.delete(rows);
  }

  /**
   * Lays the index out again (tails merged, tombstoned tokens dropped), re-training the
   * centroids — `ivfCentroids` of the live tokens unless set — when the drift passed
   * `driftThreshold`. Searches run exactly meanwhile ({@link busy}).
   */
  async compact(driftThreshold: number, params: IvfBankParams): Promise<boolean> {
    this.busy = true;
    try {
      const centroids = params.centroids ?? ivfCentroids(this.liveTokens);
      const train = { centroids, residualBits: params.residualBits };
      const { reclustered } = await this.index.compact({ driftThreshold, params: train });
      this.#stonedTokens = 0;
      this.compactions++;
      if (reclustered) this.reclusters++;
      return reclustered;
    } finally {
      this.busy = false;
    }
  }

  /** Ends the index's scan workers; later searches through it run exactly. */
  dispose(): Promise<void> {
    this.disposed = true;
    return this.index.close();
  }

  #record(id: string, seq: number, offsets: Int32Array): IvfEntry {
    const row = this.#rows++;
    const first = offsets[row]!;
    const e: IvfEntry = { id, seq, row, first, count: offsets[row + 1]! - first, dead: false };
    this.#bySeq.set(seq, e);
    this.#live.set(id, e);
    this.#maxSeq = Math.max(this.#maxSeq, seq);
    return e;
  }
}

function sideOf(
  model: CodecModel,
  codes: Float32Array,
  offsets: Int32Array,
  rows: number,
  tokens: number,
  dim: number,
): CodecSide {
  return {
    model,
    codes: new Uint8Array(codes.buffer, codes.byteOffset, tokens * dim * 4),
    tokenOffsets: offsets.subarray(0, rows + 1),
  };
}

/** A larger copy (doubling: appends cost amortised O(1) per value). */
function grown<T extends Float32Array | Int32Array>(a: T, need: number): T {
  const out = new (a.constructor as new (n: number) => T)(Math.max(need, 2 * a.length));
  out.set(a);
  return out;
}
