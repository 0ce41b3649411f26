import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncPath } from '@bfe/core';
import { LiveIndex, applyRecord, rowsByBank } from './apply.js';
import {
  mergeCodes,
  mergeSegments,
  planCompaction,
  swapCompacted,
  type CompactionReport,
} from './compaction.js';
import { failpoint } from './faults.js';
import {
  planGroup,
  type CommitRequest,
  type CommitStats,
  type DeleteOutcome,
  type PlannedCommit,
} from './group-commit.js';
import { MemoryInputError, type ValidMemory } from '../input.js';
import { gatherRows } from './live-rows.js';
import { segmentFile, walFile, writeManifest, type Manifest } from './manifest.js';
import type { Recovered } from './recovery.js';
import type { SegmentCodes, SegmentRows } from './segment.js';
import { writeBankSegment } from './segment-write.js';
import type { StoreCodec, StoreSettings } from './settings.js';
import type { Segment } from './state.js';
import { manifestOf, withBatch, type StoreState } from './state.js';
import type { IndexLink } from '../index/graph/keeper.js';
import { StoreLexicon } from '../lexical/store-lexicon.js';
import type { Bm25Language } from '@bfe/scorer';
import type { EncodedTexts } from '../types.js';
import { WalWriter, type WalRecord } from './wal.js';

export interface WriterConfig {
  readonly model: string;
  readonly dim: number;
  readonly flushBytes: number;
  readonly compactSegments: number;
  /** BM25's language of the lexical index. */
  readonly bm25Language: Bm25Language;
  /** Concurrent write calls share one WAL fsync (each still acknowledged only when durable). */
  readonly groupCommit: boolean;
}

/**
 * The store's single writer: the WAL, the current state, the manifest, flushes and
 * compactions. Writes run one group at a time (a promise-chain mutex; see `group-commit.ts`); a compaction's merge and
 * segment write run outside it, so writers and readers go on meanwhile.
 */
export class Writer {
  readonly live = new LiveIndex();
  readonly recovery: Recovered['replayed'] & { readonly removed: readonly string[] };
  #state: StoreState;
  #wal: WalWriter;
  #walGeneration: number;
  #checkpointSeq: number;
  #nextSegment: number;
  #memBytes = 0;
  #queue: Promise<unknown> = Promise.resolve();
  /** Write calls waiting for the next group, and whether a group is queued to take them. */
  readonly #pending: CommitRequest[] = [];
  #scheduled = false;
  readonly #commits = { records: 0, syncs: 0, largestGroup: 0 };
  #compactions: Promise<unknown> = Promise.resolve();
  #background: Promise<void> = Promise.resolve();
  #backgroundError: unknown;
  #closing = false;
  #settings: StoreSettings;
  /** The attached index (the store's HNSW graphs), told of every applied write. */
  listener: IndexLink | undefined;
  /** The lexical index (BM25 postings per bank), kept in step with the live memories. */
  readonly lexicon: StoreLexicon;

  constructor(
    readonly dir: string,
    r: Recovered,
    readonly releaseLock: () => Promise<void>,
    readonly config: WriterConfig,
  ) {
    this.#state = r.state;
    this.#settings = r.settings;
    this.#wal = r.wal;
    this.#walGeneration = r.walGeneration;
    this.#checkpointSeq = r.manifest.checkpointSeq;
    this.#nextSegment = r.manifest.nextSegment;
    this.recovery = { ...r.replayed, removed: r.removed };
    this.lexicon = new StoreLexicon(config.bm25Language, (bank) => this.live.rows(bank));
    for (const b of r.state.memtable) this.#memBytes += bytesOf(b.encoded);
    const banks = new Set([
      ...r.state.segments.map((s) => s.bank),
      ...r.state.memtable.map((b) => b.bank),
    ]);
    for (const bank of banks) this.live.rebuild(r.state, bank);
  }

  get state(): StoreState {
    return this.#state;
  }

  get settings(): StoreSettings {
    return this.#settings;
  }

  get walBytes(): number {
    return this.#wal.bytes;
  }

  /** Runs `fn` alone among writes. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** @throws MemoryInputError when an added id exists, or an updated one does not */
  checkExistence(memories: readonly ValidMemory[], update: boolean): void {
    const issues: string[] = [];
    memories.forEach((m, i) => {
      const exists = this.live.get(m.bank, m.id) !== undefined;
      if (exists && !update)
        issues.push(`[${i}]: id '${m.id}' already exists in bank '${m.bank}' (use update)`);
      if (!exists && update) issues.push(`[${i}]: id '${m.id}' does not exist in bank '${m.bank}'`);
    });
    if (issues.length > 0) throw new MemoryInputError(issues);
  }

  /**
   * Appends an add/update record (durable on return) and applies it. Calls that arrive while
   * an fsync is under way share the next one (group commit, unless `groupCommit` is off).
   */
  async commitAdd(
    memories: readonly ValidMemory[],
    encoded: EncodedTexts,
    update: boolean,
  ): Promise<void> {
    await new Promise<DeleteOutcome | undefined>((resolve, reject) =>
      this.#submit({ kind: 'add', memories, encoded, update, resolve, reject }),
    );
  }

  /** Appends a delete record for the ids `bank` holds (durable on return) and applies it. */
  async commitDelete(bank: string, ids: readonly string[]): Promise<DeleteOutcome> {
    const outcome = await new Promise<DeleteOutcome | undefined>((resolve, reject) =>
      this.#submit({ kind: 'delete', bank, ids, resolve, reject }),
    );
    return outcome!;
  }

  /** How many records the WAL fsyncs acknowledged, and in how many groups. */
  get commits(): CommitStats {
    return { ...this.#commits };
  }

  #submit(request: CommitRequest): void {
    this.#pending.push(request);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#pending.length === 0) return;
    this.#scheduled = true;
    void this.#exclusive(() => this.#commitGroup());
  }

  /**
   * One group: every call waiting now (one without group commit), planned in arrival order,
   * written as one record each, one fdatasync, then applied in order and acknowledged. Calls
   * arriving meanwhile form the next group.
   */
  async #commitGroup(): Promise<void> {
    const group = this.#pending.splice(0, this.config.groupCommit ? this.#pending.length : 1);
    this.#scheduled = false;
    this.#schedule();
    let planned: PlannedCommit[] = [];
    try {
      planned = planGroup(
        group,
        this.#state.nextSeq,
        (bank, id) => this.live.get(bank, id) !== undefined,
      );
      const records = planned.flatMap((p) => (p.record === undefined ? [] : [p.record]));
      await this.#wal.appendGroup(records);
      if (records.length > 0) {
        this.#commits.records += records.length;
        this.#commits.syncs++;
        this.#commits.largestGroup = Math.max(this.#commits.largestGroup, records.length);
      }
      for (const { record } of planned) if (record !== undefined) await this.#applyLocked(record);
      if (this.#memBytes >= this.config.flushBytes) await this.#flushLocked();
    } catch (error) {
      for (const p of planned) p.request.reject(error);
      return;
    }
    for (const p of planned) p.request.resolve(p.outcome);
  }

  /** Applies a durable record to the state, the live rows, the lexicon and the index. */
  async #applyLocked(record: WalRecord): Promise<void> {
    if (record.kind === 'delete') {
      this.#state = applyRecord(this.#state, record);
      this.live.remove(record.bank, record.ids);
      this.lexicon.deleted(record.bank, record.ids);
      await this.listener?.applied({ kind: 'delete', bank: record.bank, ids: record.ids });
      return;
    }
    const batches = rowsByBank(record);
    for (const rows of batches) {
      this.#state = withBatch(this.#state, rows);
      this.live.addRows(rows);
      this.lexicon.added(rows);
    }
    for (const rows of batches) await this.listener?.applied({ kind: 'add', rows });
    this.#memBytes += bytesOf(record.encoded);
  }

  flush(): Promise<void> {
    return this.#exclusive(() => this.#flushLocked());
  }

  /** The manifest of state `s` at the current checkpoint: flushed tombstones only. */
  #manifest(s: StoreState, walGeneration: number, checkpointSeq: number): Manifest {
    const { model, dim } = this.config;
    const at = { walGeneration, checkpointSeq, nextSegment: this.#nextSegment };
    return manifestOf(s, { model, dim, ...this.#settings }, at);
  }

  async #flushLocked(): Promise<void> {
    const s = this.#state;
    const pendingStones = [...s.tombstones.values()].some((m) =>
      [...m.values()].some((seq) => seq >= this.#checkpointSeq),
    );
    if (s.memtable.length === 0 && !pendingStones) return;
    const banks = [...new Set(s.memtable.map((b) => b.bank))];
    const written: Segment[] = [];
    const generation = this.#walGeneration + 1;
    const walPath = join(this.dir, walFile(generation));
    let next: WalWriter | undefined;
    try {
      for (const bank of banks) {
        const batches = s.memtable.filter((b) => b.bank === bank);
        const refs = batches.flatMap((source) =>
          Array.from(source.ids, (_, row) => ({ source, row, seq: source.seqs[row]! })),
        );
        const rows = gatherRows(refs, bank, this.config.dim);
        const file = segmentFile(this.#nextSegment++);
        written.push(await this.#writeSegment(file, bank, rows));
      }
      failpoint('flush-segments');
      next = await WalWriter.open(walPath);
      await fsyncPath(this.dir);
      const flushed: StoreState = {
        ...s,
        segments: [...s.segments, ...written],
        memtable: [],
      };
      await writeManifest(this.dir, this.#manifest(flushed, generation, s.nextSeq));
      failpoint('flush-manifest');
      this.#state = flushed;
    } catch (error) {
      await next?.close();
      await rm(walPath, { force: true });
      for (const seg of written) await rm(seg.path, { force: true });
      throw error;
    }
    const old = this.#wal;
    this.#wal = next;
    this.#walGeneration = generation;
    this.#checkpointSeq = s.nextSeq;
    this.#memBytes = 0;
    await old.close();
    await rm(old.path, { force: true });
    for (const bank of banks) this.live.rebuild(this.#state, bank);
    await this.listener?.flushed();
    this.#maybeCompact(banks);
  }

  #writeSegment(
    file: string,
    bank: string,
    rows: SegmentRows,
    coded?: SegmentCodes,
  ): Promise<Segment> {
    const { model, dim } = this.config;
    const at = { dir: this.dir, model, dim, codec: this.#settings.codec, cache: this.#state.cache };
    return writeBankSegment(at, file, bank, rows, coded);
  }

  #maybeCompact(banks: readonly string[]): void {
    const every = this.config.compactSegments;
    if (every <= 0 || this.#closing) return;
    for (const bank of banks) {
      const count = this.#state.segments.filter((seg) => seg.bank === bank).length;
      if (count >= every)
        this.#background = this.#background.then(() =>
          this.compact(bank).then(
            () => undefined,
            (error: unknown) => {
              this.#backgroundError ??= error;
            },
          ),
        );
    }
  }

  /**
   * Compacts one bank, or every bank worth it; compactions run one at a time. With `codec`
   * (a migration): new segments are written in it from now on, and every segment in another
   * codec is rewritten (its tokens decoded and encoded again).
   */
  compact(bank?: string, codec?: StoreCodec): Promise<CompactionReport[]> {
    const run = this.#compactions.then(async () => {
      if (codec !== undefined && codec !== this.#settings.codec) {
        this.#settings = { ...this.#settings, codec };
        await this.#exclusive(() =>
          writeManifest(
            this.dir,
            this.#manifest(this.#state, this.#walGeneration, this.#checkpointSeq),
          ),
        );
      }
      const banks =
        bank === undefined ? [...new Set(this.#state.segments.map((s) => s.bank))] : [bank];
      const reports: CompactionReport[] = [];
      for (const b of banks) {
        const report = await this.#compactBank(b, codec);
        if (report !== undefined) reports.push(report);
      }
      return reports;
    });
    this.#compactions = run.catch(() => undefined);
    return run;
  }

  async #compactBank(bank: string, codec?: StoreCodec): Promise<CompactionReport | undefined> {
    const planned = await this.#exclusive(() => {
      const plan = planCompaction(this.#state, bank, this.#checkpointSeq, codec);
      if (plan === undefined) return Promise.resolve(undefined);
      for (const seg of plan.segments) seg.acquire();
      return Promise.resolve({ plan, file: segmentFile(this.#nextSegment++) });
    });
    if (planned === undefined) return undefined;
    const { plan, file } = planned;
    const path = join(this.dir, file);
    let merged: Segment | undefined;
    try {
      const rows = mergeSegments(plan, this.config.dim);
      const coded = mergeCodes(plan, rows, this.#settings.codec);
      if (rows.ids.length > 0) merged = await this.#writeSegment(file, bank, rows, coded);
      failpoint('compact-segment');
      await this.#exclusive(async () => {
        const next = swapCompacted(this.#state, plan, merged);
        await writeManifest(
          this.dir,
          this.#manifest(next, this.#walGeneration, this.#checkpointSeq),
        );
        failpoint('compact-manifest');
        this.#state = next;
        this.live.rebuild(next, bank);
      });
    } catch (error) {
      await rm(path, { force: true });
      for (const seg of plan.segments) await seg.release();
      throw error;
    }
    for (const seg of plan.segments) {
      await seg.retire();
      await seg.release();
    }
    await this.listener?.compacted?.(bank);
    return {
      bank,
      segmentsIn: plan.segments.length,
      segmentsOut: merged === undefined ? 0 : 1,
      rowsIn: plan.segments.reduce((a, seg) => a + seg.entry.rows, 0),
      rowsOut: merged?.entry.rows ?? 0,
      tombstonesDropped: plan.tombstones.size,
    };
  }

  /** Waits for compactions, flushes (when asked), closes the WAL, releases the lock. */
  async close(flush: boolean): Promise<void> {
    this.#closing = true; // the closing flush starts no compaction that would outlive the lock
    try {
      await this.#background;
      await this.#compactions;
      if (flush) await this.flush();
    } finally {
      await this.#queue;
      await this.listener?.close();
      await this.#wal.close();
      await this.releaseLock();
    }
    if (this.#backgroundError !== undefined) throw this.#backgroundError;
  }
}

function bytesOf(e: EncodedTexts): number {
  return e.pooled.byteLength + e.tokenVectors.byteLength + e.tokenIds.byteLength * 2;
}
