import { gatherRows, liveRows } from './live-rows.js';
import type { CodecModel } from '@bfe/index';
import { FileRows } from './file-rows.js';
import { MAX_CODEC_BLOCKS, type SegmentCodes, type SegmentRows } from './segment.js';
import type { StoreCodec } from './settings.js';
import type { Segment, StoreState } from './state.js';

/** What one compaction of one bank did. */
export interface CompactionReport {
  readonly bank: string;
  /** Segments merged (and retired). */
  readonly segmentsIn: number;
  /** 1, or 0 when nothing of the bank survived. */
  readonly segmentsOut: number;
  readonly rowsIn: number;
  readonly rowsOut: number;
  /** Tombstones dropped: every row they deleted is gone from the segments. */
  readonly tombstonesDropped: number;
}

/** The inputs of one bank's compaction, captured at its start. */
export interface CompactionPlan {
  readonly bank: string;
  readonly segments: readonly Segment[];
  /**
   * The bank's flushed tombstones (sequence below the checkpoint): every row they can delete
   * is in `segments`, so after the merge they delete nothing and can go. Tombstones of the
   * memtable are not taken: they may still delete memtable rows.
   */
  readonly tombstones: ReadonlyMap<string, number>;
}

/**
 * Plans the compaction of `bank` in state `s`: its segments and flushed tombstones, or
 * `undefined` when there is nothing to gain (one segment or none, no flushed tombstone, and —
 * with `codec` — no segment in another codec).
 */
export function planCompaction(
  s: StoreState,
  bank: string,
  checkpointSeq: number,
  codec?: StoreCodec,
): CompactionPlan | undefined {
  const segments = s.segments.filter((seg) => seg.bank === bank);
  const tombstones = new Map<string, number>();
  for (const [id, seq] of s.tombstones.get(bank) ?? [])
    if (seq < checkpointSeq) tombstones.set(id, seq);
  const recode =
    codec !== undefined && segments.some((seg) => (seg.entry.codec ?? 'fp32') !== codec);
  if (segments.length === 0 || (segments.length < 2 && tombstones.size === 0 && !recode))
    return undefined;
  return { bank, segments, tombstones };
}

/**
 * The merged rows of a plan: the live rows of its segments (the latest version of each id,
 * unless a planned tombstone deleted it), in write order, with their original sequences — so a
 * row superseded or deleted later, outside the plan, is still recognised as such.
 */
export function mergeSegments(plan: CompactionPlan, dim: number): SegmentRows {
  const sources = plan.segments.map((seg) => seg.rows);
  return gatherRows(liveRows(sources, plan.tombstones), plan.bank, dim);
}

/**
 * The token codes of `merged` (a plan's merged rows, in its order) copied from the segments'
 * own codes — no second rounding — when every row's segment keeps `codec` and the models stay
 * within {@link MAX_CODEC_BLOCKS}; otherwise undefined (the merged rows are encoded again).
 */
export function mergeCodes(
  plan: CompactionPlan,
  merged: SegmentRows,
  codec: StoreCodec,
): SegmentCodes | undefined {
  // Write sequences are unique in a store: the merged row of sequence q is that source row.
  const bySeq = new Map<number, { coded: SegmentCodes; row: number; offsets: Int32Array }>();
  for (const seg of plan.segments) {
    const whole = seg.rows instanceof FileRows ? seg.rows.rows() : seg.rows;
    const coded = whole.codes;
    if (coded === undefined || coded.models[0]!.name !== codec) return undefined;
    for (let row = 0; row < whole.ids.length; row++)
      bySeq.set(whole.seqs[row]!, { coded, row, offsets: whole.encoded.tokenOffsets });
  }
  const n = merged.ids.length;
  const width = codecWidth(plan, codec);
  const e = merged.encoded;
  const codes = new Uint8Array(e.tokenOffsets[n]! * width);
  const blocks = new Uint16Array(n);
  const models: CodecModel[] = [];
  const index = new Map<CodecModel | string, number>();
  for (let i = 0; i < n; i++) {
    const hit = bySeq.get(merged.seqs[i]!);
    if (hit === undefined) return undefined;
    const model = hit.coded.models[hit.coded.blocks[hit.row]!]!;
    // fp32 and fp16 have no fitted parameters: all their models are one.
    const key = Object.keys(model.params).length === 0 ? model.name : model;
    let block = index.get(key);
    if (block === undefined) {
      if (models.length === MAX_CODEC_BLOCKS) return undefined;
      index.set(key, (block = models.length));
      models.push(model);
    }
    blocks[i] = block;
    const from = hit.offsets[hit.row]!;
    const to = hit.offsets[hit.row + 1]!;
    if (to - from !== e.tokenOffsets[i + 1]! - e.tokenOffsets[i]!) return undefined;
    codes.set(hit.coded.codes.subarray(from * width, to * width), e.tokenOffsets[i]! * width);
  }
  return { models, blocks, codes };
}

function codecWidth(plan: CompactionPlan, codec: StoreCodec): number {
  for (const seg of plan.segments) {
    const whole = seg.rows instanceof FileRows ? seg.rows.rows() : seg.rows;
    if (whole.codes !== undefined) return whole.codes.models[0]!.bytesPerToken;
  }
  throw new Error(`no segment of the plan keeps ${codec} codes`);
}

/**
 * State `s` (current, possibly changed since the plan by flushes and deletes) with the plan's
 * segments replaced by `merged` (at the place of the first) and its tombstones dropped.
 */
export function swapCompacted(
  s: StoreState,
  plan: CompactionPlan,
  merged: Segment | undefined,
): StoreState {
  const retired = new Set(plan.segments);
  const segments: Segment[] = [];
  let placed = merged === undefined;
  for (const seg of s.segments) {
    if (!retired.has(seg)) segments.push(seg);
    else if (!placed) {
      segments.push(merged!);
      placed = true;
    }
  }
  const tombstones = new Map(s.tombstones);
  const stones = new Map(s.tombstones.get(plan.bank));
  for (const [id, seq] of plan.tombstones) if (stones.get(id) === seq) stones.delete(id);
  if (stones.size === 0) tombstones.delete(plan.bank);
  else tombstones.set(plan.bank, stones);
  return { ...s, segments, tombstones };
}
