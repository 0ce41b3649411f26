import { open, readFile, truncate, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { toStorageError } from '@bfe/core';
import { tokenCount } from './encoded.js';
import { failpoint } from './faults.js';
import type { EncodedTexts, MemoryMeta } from '../types.js';

// The write-ahead log: one file per generation (`wal-<n>.log`), a sequence of framed records
//   [u32 payload length][u32 CRC-32 of payload][payload]
// (little-endian). An add's payload carries its encoded vectors as raw bytes, so replay needs
// no model and restores bit-identical vectors. A record is acknowledged only after it is
// written and fdatasync'd; a crash can leave at most one torn record at the tail, which
// replay drops (and the writer truncates) — it was never acknowledged.

/**
 * An add (or update) of a batch of memories, one call's worth (any banks: the call is atomic);
 * row `i` gets sequence `seq + i`.
 */
export interface WalAdd {
  readonly kind: 'add';
  readonly seq: number;
  readonly banks: readonly string[];
  readonly update: boolean;
  readonly ids: readonly string[];
  readonly texts: readonly string[];
  readonly metas: readonly (MemoryMeta | undefined)[];
  readonly encoded: EncodedTexts;
}

/** Deletes of ids in one bank at sequence `seq`. */
export interface WalDelete {
  readonly kind: 'delete';
  readonly seq: number;
  readonly bank: string;
  readonly ids: readonly string[];
}

export type WalRecord = WalAdd | WalDelete;

/** Sequence numbers a record takes: one per added row, one per delete batch. */
export function recordSpan(r: WalRecord): number {
  return r.kind === 'add' ? r.ids.length : 1;
}

const FRAME = 8;
/** A frame claiming more than this is corrupt, not a huge batch (bounds replay's allocation). */
const MAX_PAYLOAD = 1 << 30;

interface Header {
  readonly v: 1;
  readonly kind: 'add' | 'delete';
  readonly seq: number;
  readonly bank?: string;
  readonly banks?: readonly string[];
  readonly ids: readonly string[];
  readonly update?: boolean;
  readonly texts?: readonly string[];
  readonly metas?: readonly (MemoryMeta | null)[];
  readonly dim?: number;
  readonly tokens?: number;
}

const pad4 = (n: number): number => (n + 3) & ~3;

/** One framed record, ready to append. */
export function encodeRecord(r: WalRecord): Buffer {
  const header: Header =
    r.kind === 'delete'
      ? { v: 1, kind: 'delete', seq: r.seq, bank: r.bank, ids: r.ids }
      : {
          v: 1,
          kind: 'add',
          seq: r.seq,
          banks: r.banks,
          ids: r.ids,
          update: r.update,
          texts: r.texts,
          metas: r.metas.map((m) => m ?? null),
          dim: r.encoded.dim,
          tokens: tokenCount(r.encoded),
        };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const sections: ArrayBufferView[] = [];
  if (r.kind === 'add') {
    const e = r.encoded;
    const n = tokenCount(e);
    sections.push(
      e.pooled.subarray(0, e.count * e.dim),
      e.tokenOffsets.subarray(0, e.count + 1),
      e.tokenVectors.subarray(0, n * e.dim),
      e.tokenIds.subarray(0, n),
      e.tokenPositions.subarray(0, n),
      e.truncated.subarray(0, e.count),
    );
  }
  let size = 4 + pad4(json.length);
  for (const s of sections) size += pad4(s.byteLength);
  const out = Buffer.alloc(FRAME + size);
  out.writeUInt32LE(json.length, FRAME);
  json.copy(out, FRAME + 4);
  let at = FRAME + 4 + pad4(json.length);
  for (const s of sections) {
    out.set(new Uint8Array(s.buffer, s.byteOffset, s.byteLength), at);
    at += pad4(s.byteLength);
  }
  out.writeUInt32LE(size, 0);
  out.writeUInt32LE(crc32(out.subarray(FRAME)), 4);
  return out;
}

/** What a WAL file holds: its intact records, and where the intact prefix ends. */
export interface WalContents {
  readonly records: WalRecord[];
  /** Bytes of the intact prefix; anything after it is a torn or corrupt tail. */
  readonly validBytes: number;
  readonly fileBytes: number;
}

/**
 * Decodes records up to the first torn or corrupt one (short frame, bad length, CRC mismatch,
 * unreadable payload): everything after it is a tail no writer acknowledged.
 */
export function decodeRecords(bytes: Uint8Array): WalContents {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: WalRecord[] = [];
  let at = 0;
  while (at + FRAME <= buf.length) {
    const size = buf.readUInt32LE(at);
    if (size < 4 || size > MAX_PAYLOAD || at + FRAME + size > buf.length) break;
    const payload = buf.subarray(at + FRAME, at + FRAME + size);
    if (crc32(payload) !== buf.readUInt32LE(at + 4)) break;
    const record = decodePayload(payload);
    if (record === undefined) break;
    records.push(record);
    at += FRAME + size;
  }
  return { records, validBytes: at, fileBytes: buf.length };
}

function decodePayload(payload: Buffer): WalRecord | undefined {
  try {
    const jsonBytes = payload.readUInt32LE(0);
    const h = JSON.parse(payload.toString('utf8', 4, 4 + jsonBytes)) as Header;
    if (h.v !== 1) return undefined;
    if (h.kind === 'delete') return { kind: 'delete', seq: h.seq, bank: h.bank!, ids: h.ids };
    const count = h.ids.length;
    const dim = h.dim!;
    const tokens = h.tokens!;
    let at = 4 + pad4(jsonBytes);
    // Views into the file's bytes where aligned (a frame starts at a multiple of 4 and every
    // section is padded to 4), copies otherwise: replay of a large WAL copies nothing.
    const take = <T extends Float32Array | Int32Array | Uint8Array>(
      make: { new (b: ArrayBufferLike, o: number, n: number): T; new (n: number): T },
      n: number,
      size: number,
    ): T | undefined => {
      const bytes = n * size;
      if (at + bytes > payload.length) return undefined;
      const offset = payload.byteOffset + at;
      at += pad4(bytes);
      if (offset % size === 0) return new make(payload.buffer, offset, n);
      const out = new make(n);
      new Uint8Array(out.buffer).set(payload.subarray(at - pad4(bytes), at - pad4(bytes) + bytes));
      return out;
    };
    const pooled = take(Float32Array, count * dim, 4);
    const tokenOffsets = take(Int32Array, count + 1, 4);
    const tokenVectors = take(Float32Array, tokens * dim, 4);
    const tokenIds = take(Int32Array, tokens, 4);
    const tokenPositions = take(Int32Array, tokens, 4);
    const truncated = take(Uint8Array, count, 1);
    if (
      pooled === undefined ||
      tokenOffsets === undefined ||
      tokenVectors === undefined ||
      tokenIds === undefined ||
      tokenPositions === undefined ||
      truncated === undefined
    )
      return undefined;
    const e: EncodedTexts = {
      count,
      dim,
      pooled,
      tokenOffsets,
      tokenVectors,
      tokenIds,
      tokenPositions,
      truncated,
    };
    return {
      kind: 'add',
      seq: h.seq,
      banks: h.banks!,
      update: h.update === true,
      ids: h.ids,
      texts: h.texts!,
      metas: h.metas!.map((m) => m ?? undefined),
      encoded: e,
    };
  } catch {
    return undefined;
  }
}

/** Reads a WAL file (see {@link decodeRecords}). */
export async function readWal(path: string): Promise<WalContents> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw await toStorageError(error, path);
  }
  return decodeRecords(bytes);
}

/**
 * Appends records to one WAL file. {@link WalWriter.open} cuts a torn tail off first, so new
 * records never follow garbage.
 */
export class WalWriter {
  #bytes: number;
  private constructor(
    readonly path: string,
    readonly handle: FileHandle,
    bytes: number,
  ) {
    this.#bytes = bytes;
  }

  /** Opens (creating) `path` for appending, truncated to `validBytes` when given. */
  static async open(path: string, validBytes?: number): Promise<WalWriter> {
    try {
      if (validBytes !== undefined) await truncate(path, validBytes);
      const handle = await open(path, 'a');
      if (validBytes !== undefined) await handle.sync();
      const { size } = await handle.stat();
      return new WalWriter(path, handle, size);
    } catch (error) {
      throw await toStorageError(error, path);
    }
  }

  /** File size in bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Appends one record and returns once it is on disk (fdatasync): the acknowledgement point. */
  append(record: WalRecord): Promise<void> {
    return this.appendGroup([record]);
  }

  /**
   * Appends records in order with one fdatasync for all of them (group commit): none is on disk
   * for sure before it resolves, all are after. A crash meanwhile leaves a prefix of them whole
   * and at most one torn (each record is its own frame and CRC), never a part of one.
   */
  async appendGroup(records: readonly WalRecord[]): Promise<void> {
    if (records.length === 0) return;
    const frames = records.map(encodeRecord);
    const total = frames.reduce((a, f) => a + f.length, 0);
    let size = 0;
    try {
      for (const frame of frames) {
        // write(2) may write less than asked (a signal, a nearly full disk): loop to the end.
        for (let at = 0; at < frame.length;) {
          const { bytesWritten } = await this.handle.write(frame, at, frame.length - at);
          at += bytesWritten;
        }
        size += frame.length;
        if (frames.length > 1 && size === frames[0]!.length) failpoint('wal-group-partial');
      }
      failpoint('wal-written');
      await this.handle.datasync();
      if (frames.length > 1) failpoint('wal-group-synced');
    } catch (error) {
      // A half-written frame must not stay in front of the next record.
      await this.handle.truncate(this.#bytes).catch(() => undefined);
      throw await toStorageError(error, this.path, total);
    }
    this.#bytes += total;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
