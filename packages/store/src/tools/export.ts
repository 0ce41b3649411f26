import { access } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  Field,
  Float64,
  Int32,
  Int64,
  RecordBatch,
  Schema,
  Struct,
  Utf8,
  makeData,
  vectorFromArray,
  type Data,
} from 'apache-arrow';
import { ConfigError, DataError, float32ListVector, writeWithHandle } from '@bfe/core';
import { readManifest } from '../log/manifest.js';
import { recordedSettings } from '../log/settings.js';
import type { MemoryStore } from '../store.js';
import type { BankView } from '../types.js';
import { viewTokens } from '../view-tokens.js';
import { IpcFileOut } from './ipc-out.js';

/** File names {@link exportStore} writes in its output directory. */
export const EXPORT_FILES = { memories: 'memories.arrow', tokens: 'tokens.arrow' } as const;

/** `bfe.format` in the exported files' schema metadata. */
export const EXPORT_FORMAT = 'bfe-store-export/1';

/** Rows of one record batch: bounds what one batch's columns hold beyond the bank's view. */
const BATCH_MEMORIES = 4096;
const BATCH_TOKENS = 65_536;

/** Options of {@link exportStore}. */
export interface ExportOptions {
  /** Export this bank only (default: every bank with live memories). */
  readonly bank?: string | undefined;
  /** Replace `memories.arrow` / `tokens.arrow` already in the output directory. */
  readonly overwrite?: boolean;
  /** Rows per record batch (default 4,096 memories, 65,536 tokens). */
  readonly batch?: { readonly memories?: number; readonly tokens?: number };
  /** Called after each bank is written. */
  readonly onBank?: (done: number, total: number, bank: string) => void;
}

/** What {@link exportStore} wrote. */
export interface ExportReport {
  readonly out: string;
  readonly files: { readonly memories: string; readonly tokens: string };
  readonly banks: readonly {
    readonly bank: string;
    readonly memories: number;
    readonly tokens: number;
  }[];
  readonly memories: number;
  readonly tokens: number;
  readonly bytes: { readonly memories: number; readonly tokens: number };
}

/**
 * Exports a store's live memories as two Arrow IPC files that pyarrow, polars or DuckDB read
 * without bfe, from one snapshot (consistent across banks and files), bank by bank, each bank
 * in record batches written to disk before the next is made:
 * - `memories.arrow`: `bank` Utf8 · `id` Utf8 · `text` Utf8 · `meta` Utf8 (JSON, null when
 *   none) · `seq` Float64 (write sequence) · `pooled` FixedSizeList<Float32, dim> ·
 *   `token_start` Int64 (the memory's first row in `tokens.arrow`) · `token_count` Int32;
 * - `tokens.arrow`: `bank` Utf8 · `memory_id` Utf8 · `memory_row` Int64 (the memory's row in
 *   `memories.arrow`) · `token_id` Int32 (vocabulary id) · `position` Int32 (in the model
 *   input) · `vector` FixedSizeList<Float32, dim> (L2-normalised content-token state).
 *
 * Rows are in the store's order (banks by name, a bank's memories in write order, a memory's
 * tokens in order). Schema metadata: `bfe.format`, `bfe.table`, `bfe.model` (model hash),
 * `bfe.dim`, `bfe.codec` (the store's codec; vectors are exported decoded, as float32),
 * `bfe.window` (JSON, when the store encodes in windows), `bfe.banks` (JSON list).
 * Each file is written to a temporary sibling and renamed into place when complete.
 * @throws DataError when `bank` is given and the store has no live memory in it
 * @throws ConfigError when the files exist and `overwrite` is not set
 * @example
 * const r = await exportStore(store, 'out/'); // r.files.tokens === 'out/tokens.arrow'
 * // pyarrow: pa.ipc.open_file('out/tokens.arrow').read_all().column('vector').type
 * //   → fixed_size_list<item: float not null>[384]
 */
export async function exportStore(
  store: MemoryStore,
  outDir: string,
  options: ExportOptions = {},
): Promise<ExportReport> {
  const out = resolve(outDir);
  const files = {
    memories: join(out, EXPORT_FILES.memories),
    tokens: join(out, EXPORT_FILES.tokens),
  };
  if (options.overwrite !== true)
    for (const path of Object.values(files))
      if (await exists(path))
        throw new ConfigError(`${path} already exists`, {
          suggestion: 'Choose another output directory, or replace the files (--force).',
        });
  const manifest = await readManifest(store.dir);
  if (manifest === undefined) throw new Error(`exportStore: ${store.dir} has no manifest`);
  const settings = recordedSettings(manifest);
  const snap = store.snapshot();
  // Read in the same synchronous step as the snapshot: the banks with live memories in it.
  const live = store.banks().sort();
  try {
    const { bank } = options;
    if (bank !== undefined && !live.includes(bank))
      throw new DataError(`store ${store.dir} has no live memory in bank '${bank}'`, {
        suggestion: `Its banks: ${live.join(', ') || '(none)'}.`,
      });
    const banks = bank === undefined ? live : [bank];
    const dim = snap.dim;
    const metadata = (table: string): Map<string, string> =>
      new Map([
        ['bfe.format', EXPORT_FORMAT],
        ['bfe.table', table],
        ['bfe.model', snap.model],
        ['bfe.dim', String(dim)],
        ['bfe.codec', settings.codec],
        ...(settings.window === undefined
          ? []
          : [['bfe.window', JSON.stringify(settings.window)] as [string, string]]),
        ['bfe.banks', JSON.stringify(banks)],
      ]);
    const schemas = exportSchemas(dim, metadata);
    // Both files written to temporary siblings, renamed into place once both are complete.
    return await writeWithHandle(files.memories, (memoriesHandle) =>
      writeWithHandle(files.tokens, async (tokensHandle) => {
        const memoriesOut = await IpcFileOut.start(
          memoriesHandle,
          files.memories,
          schemas.memories,
        );
        const tokensOut = await IpcFileOut.start(tokensHandle, files.tokens, schemas.tokens);
        const written: { bank: string; memories: number; tokens: number }[] = [];
        let row = 0;
        let token = 0;
        const perMemories = options.batch?.memories ?? BATCH_MEMORIES;
        const perTokens = options.batch?.tokens ?? BATCH_TOKENS;
        for (const [i, name] of banks.entries()) {
          const view = snap.bank(name);
          const n = view.ids.length;
          for (let start = 0; start < n; start += perMemories) {
            const end = Math.min(n, start + perMemories);
            await memoriesOut.write(memoriesBatch(schemas.memories, view, start, end, token));
          }
          const tokens = view.tokenOffsets[n]!;
          for (let start = 0; start < tokens; start += perTokens) {
            const end = Math.min(tokens, start + perTokens);
            await tokensOut.write(tokensBatch(schemas.tokens, view, start, end, row));
          }
          written.push({ bank: name, memories: n, tokens });
          row += n;
          token += tokens;
          options.onBank?.(i + 1, banks.length, name);
        }
        const bytes = { memories: await memoriesOut.finish(), tokens: await tokensOut.finish() };
        return { out, files, banks: written, memories: row, tokens: token, bytes };
      }),
    );
  } finally {
    await snap.release();
  }
}

function exportSchemas(
  dim: number,
  metadata: (table: string) => Map<string, string>,
): { memories: Schema; tokens: Schema } {
  const vector = float32ListVector(new Float32Array(0), dim).type;
  const memories = new Schema(
    [
      new Field('bank', new Utf8(), false),
      new Field('id', new Utf8(), false),
      new Field('text', new Utf8(), false),
      new Field('meta', new Utf8(), true),
      new Field('seq', new Float64(), false),
      new Field('pooled', vector, false),
      new Field('token_start', new Int64(), false),
      new Field('token_count', new Int32(), false),
    ],
    metadata('memories'),
  );
  const tokens = new Schema(
    [
      new Field('bank', new Utf8(), false),
      new Field('memory_id', new Utf8(), false),
      new Field('memory_row', new Int64(), false),
      new Field('token_id', new Int32(), false),
      new Field('position', new Int32(), false),
      new Field('vector', vector, false),
    ],
    metadata('tokens'),
  );
  return { memories, tokens };
}

/** Memories `start..end-1` of `view`; `tokenBase`: the bank's first row in `tokens.arrow`. */
function memoriesBatch(
  schema: Schema,
  view: BankView,
  start: number,
  end: number,
  tokenBase: number,
): RecordBatch {
  const n = end - start;
  const dim = view.dim;
  const seqs = view.seqs;
  if (seqs === undefined) throw new Error(`exportStore: the view of bank ${view.bank} has no seqs`);
  const offsets = view.tokenOffsets;
  const tokenStart = new BigInt64Array(n);
  const tokenCount = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    tokenStart[i] = BigInt(tokenBase + offsets[start + i]!);
    tokenCount[i] = offsets[start + i + 1]! - offsets[start + i]!;
  }
  const metas = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const m = view.metas[start + i];
    metas[i] = m === undefined ? null : JSON.stringify(m);
  }
  return batchOf(schema, n, [
    repeatedUtf8(view.bank, n),
    utf8(view.ids.slice(start, end)),
    utf8(view.texts.slice(start, end)),
    utf8(metas),
    makeData({ type: new Float64(), length: n, nullCount: 0, data: seqs.subarray(start, end) }),
    float32ListVector(view.pooled.subarray(start * dim, end * dim), dim).data[0]!,
    makeData({ type: new Int64(), length: n, nullCount: 0, data: tokenStart }),
    makeData({ type: new Int32(), length: n, nullCount: 0, data: tokenCount }),
  ]);
}

/** Tokens `start..end-1` of `view`; `rowBase`: the bank's first row in `memories.arrow`. */
function tokensBatch(
  schema: Schema,
  view: BankView,
  start: number,
  end: number,
  rowBase: number,
): RecordBatch {
  const n = end - start;
  const dim = view.dim;
  const offsets = view.tokenOffsets;
  const memoryIds = new Array<string>(n);
  const memoryRows = new BigInt64Array(n);
  // The owner of token `start`: the last memory whose first token is at or before it.
  let lo = 0;
  let hi = view.ids.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (offsets[mid]! <= start) lo = mid;
    else hi = mid - 1;
  }
  let m = lo;
  for (let t = 0; t < n; t++) {
    while (offsets[m + 1]! <= start + t) m++;
    memoryIds[t] = view.ids[m]!;
    memoryRows[t] = BigInt(rowBase + m);
  }
  const int32 = (values: Int32Array): Data<Int32> =>
    makeData({ type: new Int32(), length: n, nullCount: 0, data: values.subarray(start, end) });
  return batchOf(schema, n, [
    repeatedUtf8(view.bank, n),
    utf8(memoryIds),
    makeData({ type: new Int64(), length: n, nullCount: 0, data: memoryRows }),
    int32(view.tokenIds),
    int32(view.tokenPositions),
    float32ListVector(viewTokens(view).read(start, end), dim).data[0]!,
  ]);
}

function batchOf(schema: Schema, n: number, children: Data[]): RecordBatch {
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children }),
  );
}

function utf8(values: readonly (string | null)[]): Data<Utf8> {
  return vectorFromArray(values as (string | null)[], new Utf8()).data[0]!;
}

/** `value` `n` times, as one Utf8 column (a bank's name on each of its rows). */
function repeatedUtf8(value: string, n: number): Data<Utf8> {
  const bytes = Buffer.from(value, 'utf8');
  const size = bytes.byteLength;
  const data = new Uint8Array(size * n);
  const valueOffsets = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    data.set(bytes, i * size);
    valueOffsets[i + 1] = (i + 1) * size;
  }
  return makeData({ type: new Utf8(), length: n, nullCount: 0, valueOffsets, data });
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
