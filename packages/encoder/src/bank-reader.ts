import { createHash } from 'node:crypto';
import { open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FixedSizeList, Float32, Int32, Table, Vector } from 'apache-arrow';
import {
  ArtifactCorruptError,
  ConfigError,
  DataMissingError,
  flatListValues,
  readArrowFile,
} from '@bfe/core';
import { BANK_MANIFEST_FILE, bankManifestSchema, type BankManifest } from './bank-manifest.js';
import { bankFileNames, type BankRole } from './bank-files.js';
import { hashFile, readTokenFileColumns, type VectorFileLayout } from './bank-token-file.js';
import type { WindowSpec } from './window.js';

/** One role's tables, as zero-copy typed views. */
export interface BankSide {
  readonly ids: readonly string[];
  /** Memories only: each row's bank. */
  readonly bankIds: readonly string[] | undefined;
  readonly nTokens: Int32Array;
  /** Pooled vectors `[rows * dim]` (float32 files: a view into the file buffer). */
  readonly pooled: Float32Array;
  /** Row index of each token, grouped by row in row order. */
  readonly tokenOwner: Int32Array;
  readonly tokenPosition: Int32Array;
  readonly tokenId: Int32Array;
  /** Unit-norm token states `[tokens * dim]`. */
  readonly tokenVectors: Float32Array;
  /** `tokenOffsets[i]..tokenOffsets[i+1]` are row i's tokens. */
  readonly tokenOffsets: Int32Array;
}

/**
 * A memory side whose token vectors stay in `memory-tokens.arrow` (`openBank`'s
 * `memoryTokens: 'file'`): `tokenFile` says where they lie, for `@bfe/index`'s `fileTokenStore`.
 */
export interface FileBankSide extends Omit<BankSide, 'tokenVectors'> {
  readonly tokenFile: VectorFileLayout;
}

export interface OpenedBank<M extends BankSide | FileBankSide = BankSide> {
  readonly manifest: BankManifest;
  readonly dim: number;
  readonly memories: M;
  readonly queries: BankSide;
}

/** Options of {@link openBank}. */
export interface OpenBankOptions {
  /** Check every file's SHA-256 against the manifest (default true; sizes are always checked). */
  readonly verifyHashes?: boolean;
  /**
   * `memory` (default): the memory token vectors are read into one `Float32Array`. `file`: they
   * are not read at all — `memories.tokenFile` locates them in the file (hashed in slices when
   * `verifyHashes`, nothing kept), so a bank larger than RAM can be opened.
   */
  readonly memoryTokens?: 'memory' | 'file';
  /**
   * The windowing the caller expects (its experiment's `model.window`); `null`: memories
   * truncated at `maxLength`, no windows. A bank encoded otherwise is refused with
   * {@link ConfigError}. Left out: not checked.
   */
  readonly window?: WindowSpec | null;
}

/**
 * Opens an encoded bank directory: the manifest is validated, every file's size and SHA-256
 * checked against it, and each table's row counts checked against the others. A truncated,
 * corrupted or half-written bank is refused, never half-read. Float16 files are widened to
 * float32 on read.
 */
export function openBank(
  dir: string,
  options?: OpenBankOptions & { readonly memoryTokens?: 'memory' },
): Promise<OpenedBank>;
export function openBank(
  dir: string,
  options: OpenBankOptions & { readonly memoryTokens: 'file' },
): Promise<OpenedBank<FileBankSide>>;
export async function openBank(
  dir: string,
  options: OpenBankOptions = {},
): Promise<OpenedBank<BankSide | FileBankSide>> {
  let manifestText: string;
  try {
    manifestText = await readFile(join(dir, BANK_MANIFEST_FILE), 'utf8');
  } catch (cause) {
    throw new DataMissingError(
      `${dir} holds no ${BANK_MANIFEST_FILE}: not a complete encoded bank`,
      {
        cause,
        suggestion: 'Run `bfe encode` (an interrupted run leaves no manifest).',
      },
    );
  }
  const parsed = bankManifestSchema.safeParse(JSON.parse(manifestText));
  if (!parsed.success)
    throw new ArtifactCorruptError(`${join(dir, BANK_MANIFEST_FILE)}: ${parsed.error.message}`);
  const manifest = parsed.data;
  if (options.window !== undefined) checkWindow(dir, manifest, options.window);
  const verify = options.verifyHashes ?? true;
  const streamed = options.memoryTokens === 'file' ? bankFileNames('memories').tokens : undefined;
  const buffers = new Map<string, Uint8Array>();
  for (const f of manifest.files) {
    const path = join(dir, f.path);
    if (f.path === streamed) {
      await checkStreamed(path, f.bytes, verify ? f.sha256 : undefined);
      continue;
    }
    const { bytes, sha256 } = await readWhole(path, f.bytes, verify);
    if (sha256 !== undefined && sha256 !== f.sha256) {
      throw new ArtifactCorruptError(`${path}: SHA-256 does not match the manifest`);
    }
    buffers.set(f.path, bytes);
  }
  const dim = manifest.model.dimension;
  const rowsOf = (role: BankRole): Table => {
    const name = bankFileNames(role).rows;
    return readArrowFile(need(buffers, name, dir), name);
  };
  const side = (role: BankRole): BankSide => {
    const name = bankFileNames(role).tokens;
    const tokens = tableColumns(readArrowFile(need(buffers, name, dir), name), role, dim);
    const { tokenVectors, ...rest } = tokens;
    return { ...readSide(role, rowsOf(role), rest, dim, manifest), tokenVectors };
  };
  if (streamed === undefined)
    return { manifest, dim, memories: side('memories'), queries: side('queries') };
  const file = await readTokenFileColumns(join(dir, streamed), 'memory_index', dim);
  if (file.vectors.dtype !== manifest.dtype)
    throw new ArtifactCorruptError(
      `${streamed}: ${file.vectors.dtype}, bank.json says ${manifest.dtype}`,
    );
  const memories: FileBankSide = {
    ...readSide('memories', rowsOf('memories'), file, dim, manifest),
    tokenFile: file.vectors,
  };
  return { manifest, dim, memories, queries: side('queries') };
}

function describeWindow(w: WindowSpec | null | undefined): string {
  return w === null || w === undefined
    ? 'no window (memories truncated at maxLength)'
    : `window size ${w.size}, stride ${w.stride}`;
}

function checkWindow(dir: string, manifest: BankManifest, expected: WindowSpec | null): void {
  const w = manifest.window;
  const same =
    expected === null
      ? w === undefined
      : w !== undefined && w.size === expected.size && w.stride === expected.stride;
  if (!same)
    throw new ConfigError(
      `${dir}: the bank was encoded with ${describeWindow(w)}, the experiment asks for ${describeWindow(expected)}`,
      {
        suggestion:
          'Encode the bank again with the experiment’s model.window, or change the experiment.',
      },
    );
}

/** A streamed file's size, and its SHA-256 when `sha256` is given (read in slices). */
async function checkStreamed(path: string, bytes: number, sha256: string | undefined) {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (cause) {
    throw new ArtifactCorruptError(`${path}: missing from the bank`, { cause });
  }
  if (size !== bytes)
    throw new ArtifactCorruptError(`${path}: ${size} bytes, manifest says ${bytes}`);
  if (sha256 !== undefined && (await hashFile(path)).sha256 !== sha256)
    throw new ArtifactCorruptError(`${path}: SHA-256 does not match the manifest`);
}

/**
 * Reads a whole file into one buffer in 256 MiB slices (fs.readFile stops at 2 GiB, and a
 * LongMemEval S token table is larger), hashing as it goes.
 */
async function readWhole(
  path: string,
  expected: number,
  hash: boolean,
): Promise<{ bytes: Uint8Array; sha256: string | undefined }> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (cause) {
    throw new ArtifactCorruptError(`${path}: missing from the bank`, { cause });
  }
  try {
    const size = (await handle.stat()).size;
    if (size !== expected)
      throw new ArtifactCorruptError(`${path}: ${size} bytes, manifest says ${expected}`);
    const bytes = Buffer.allocUnsafe(size);
    const hasher = hash ? createHash('sha256') : undefined;
    const slice = 256 * 2 ** 20;
    for (let at = 0; at < size;) {
      const { bytesRead } = await handle.read(bytes, at, Math.min(slice, size - at), at);
      if (bytesRead === 0)
        throw new ArtifactCorruptError(`${path}: ended after ${at} of ${size} bytes`);
      hasher?.update(bytes.subarray(at, at + bytesRead));
      at += bytesRead;
    }
    return { bytes, sha256: hasher?.digest('hex') };
  } finally {
    await handle.close();
  }
}

function need(buffers: Map<string, Uint8Array>, name: string, dir: string): Uint8Array {
  const b = buffers.get(name);
  if (b === undefined) throw new ArtifactCorruptError(`${dir}: manifest does not list ${name}`);
  return b;
}

/** A token table's columns; the vectors are the caller's (in memory, or left in the file). */
interface TokenColumns {
  readonly rows: number;
  readonly metadata: Map<string, string>;
  readonly owner: Int32Array;
  readonly position: Int32Array;
  readonly tokenId: Int32Array;
}

function tableColumns(
  tokens: Table,
  role: BankRole,
  dim: number,
): TokenColumns & { tokenVectors: Float32Array } {
  return {
    rows: tokens.numRows,
    metadata: tokens.schema.metadata,
    owner: int32Column(tokens, role === 'memories' ? 'memory_index' : 'query_index'),
    position: int32Column(tokens, 'position'),
    tokenId: int32Column(tokens, 'token_id'),
    tokenVectors: floatColumn(tokens, 'vector', dim),
  };
}

function readSide(
  role: BankRole,
  rows: Table,
  tokens: TokenColumns,
  dim: number,
  manifest: BankManifest,
): Omit<BankSide, 'tokenVectors'> {
  const expected = role === 'memories' ? manifest.memories : manifest.queries;
  const name = bankFileNames(role);
  if (rows.numRows !== expected.rows || tokens.rows !== expected.tokens) {
    throw new ArtifactCorruptError(
      `${role}: ${rows.numRows} rows / ${tokens.rows} tokens, manifest says ${expected.rows} / ${expected.tokens}`,
    );
  }
  for (const [file, metadata] of [
    [name.rows, rows.schema.metadata],
    [name.tokens, tokens.metadata],
  ] as const) {
    if (
      metadata.get('bfe.dim') !== String(dim) ||
      metadata.get('bfe.model_sha256') !== manifest.model.sha256
    ) {
      throw new ArtifactCorruptError(
        `${file}: its metadata names another model or dimension than bank.json`,
      );
    }
    // Only memory files are windowed; their metadata must say what bank.json says.
    const window = role === 'memories' ? manifest.window : undefined;
    if (
      metadata.get('bfe.window_size') !==
        (window === undefined ? undefined : String(window.size)) ||
      metadata.get('bfe.window_stride') !==
        (window === undefined ? undefined : String(window.stride))
    ) {
      throw new ArtifactCorruptError(
        `${file}: its window metadata (${metadata.get('bfe.window_size') ?? 'none'}/${metadata.get('bfe.window_stride') ?? 'none'}) does not match bank.json (${describeWindow(window)})`,
      );
    }
  }
  const idName = role === 'memories' ? 'memory_id' : 'query_id';
  const nTokens = int32Column(rows, 'n_tokens');
  const tokenOwner = tokens.owner;
  const offsets = new Int32Array(rows.numRows + 1);
  for (let i = 0; i < rows.numRows; i++) offsets[i + 1] = offsets[i]! + nTokens[i]!;
  if (offsets[rows.numRows] !== tokens.rows) {
    throw new ArtifactCorruptError(
      `${role}: n_tokens sum to ${offsets[rows.numRows]}, tokens table has ${tokens.rows} rows`,
    );
  }
  for (let i = 0; i < rows.numRows; i++) {
    for (let j = offsets[i]!; j < offsets[i + 1]!; j++) {
      if (tokenOwner[j] !== i)
        throw new ArtifactCorruptError(
          `${role}: token ${j} belongs to row ${tokenOwner[j]}, expected ${i}`,
        );
    }
  }
  return {
    ids: stringColumn(rows, idName),
    bankIds: role === 'memories' ? stringColumn(rows, 'bank_id') : undefined,
    nTokens,
    pooled: floatColumn(rows, 'pooled', dim),
    tokenOwner,
    tokenPosition: tokens.position,
    tokenId: tokens.tokenId,
    tokenOffsets: offsets,
  };
}

function column<T extends Vector>(table: Table, name: string): T {
  const c = table.getChild(name);
  if (c === null) throw new ArtifactCorruptError(`column ${name} is missing`);
  return c as unknown as T;
}

function int32Column(table: Table, name: string): Int32Array {
  const v = column<Vector<Int32>>(table, name);
  if (v.data.length === 1) return v.data[0]!.values.subarray(0, v.length);
  return v.toArray() as Int32Array;
}

function stringColumn(table: Table, name: string): string[] {
  return column<Vector>(table, name).toArray() as string[];
}

function floatColumn(table: Table, name: string, dim: number): Float32Array {
  const v = column<Vector<FixedSizeList<Float32>>>(table, name);
  if (v.type.listSize !== dim)
    throw new ArtifactCorruptError(`column ${name}: list size ${v.type.listSize}, expected ${dim}`);
  const childType = String(v.type.children[0]!.type);
  if (childType === 'Float32') return flatListValues(v).values;
  // Float16: widen once on read; the bits are in the child's Uint16 values.
  const out = new Float32Array(v.length * dim);
  let at = 0;
  for (const data of v.data) {
    const bits = data.children[0]!.values as unknown as Uint16Array;
    const start = data.offset * dim;
    for (let i = 0; i < data.length * dim; i++) out[at++] = halfToFloat(bits[start + i]!);
  }
  return out;
}

const HALF = new Float32Array(1);
const HALF_BITS = new Uint32Array(HALF.buffer);
/** IEEE binary16 → float32 (exact). */
export function halfToFloat(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return (sign ? -1 : 1) * frac * 2 ** -24;
  if (exp === 31) HALF_BITS[0] = sign | 0x7f800000 | (frac << 13);
  else HALF_BITS[0] = sign | ((exp + 112) << 23) | (frac << 13);
  return HALF[0]!;
}
