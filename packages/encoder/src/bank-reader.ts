import { createHash } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FixedSizeList, Float32, Int32, Table, Vector } from 'apache-arrow';
import { ArtifactCorruptError, DataMissingError, flatListValues, readArrowFile } from '@bfe/core';
import { BANK_MANIFEST_FILE, bankManifestSchema, type BankManifest } from './bank-manifest.js';
import { bankFileNames, type BankRole } from './bank-files.js';

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

export interface OpenedBank {
  readonly manifest: BankManifest;
  readonly dim: number;
  readonly memories: BankSide;
  readonly queries: BankSide;
}

/**
 * Opens an encoded bank directory: the manifest is validated, every file's size and SHA-256
 * checked against it, and each table's row counts checked against the others. A truncated,
 * corrupted or half-written bank is refused, never half-read. Float16 files are widened to
 * float32 on read.
 */
export async function openBank(
  dir: string,
  options: { verifyHashes?: boolean } = {},
): Promise<OpenedBank> {
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
  const buffers = new Map<string, Uint8Array>();
  for (const f of manifest.files) {
    const { bytes, sha256 } = await readWhole(
      join(dir, f.path),
      f.bytes,
      options.verifyHashes ?? true,
    );
    if (sha256 !== undefined && sha256 !== f.sha256) {
      throw new ArtifactCorruptError(`${join(dir, f.path)}: SHA-256 does not match the manifest`);
    }
    buffers.set(f.path, bytes);
  }
  const dim = manifest.model.dimension;
  const side = (role: BankRole): BankSide => {
    const names = bankFileNames(role);
    const rows = readArrowFile(need(buffers, names.rows, dir), names.rows);
    const tokens = readArrowFile(need(buffers, names.tokens, dir), names.tokens);
    return readSide(role, rows, tokens, dim, manifest);
  };
  return { manifest, dim, memories: side('memories'), queries: side('queries') };
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

function readSide(
  role: BankRole,
  rows: Table,
  tokens: Table,
  dim: number,
  manifest: BankManifest,
): BankSide {
  const expected = role === 'memories' ? manifest.memories : manifest.queries;
  const name = bankFileNames(role);
  if (rows.numRows !== expected.rows || tokens.numRows !== expected.tokens) {
    throw new ArtifactCorruptError(
      `${role}: ${rows.numRows} rows / ${tokens.numRows} tokens, manifest says ${expected.rows} / ${expected.tokens}`,
    );
  }
  for (const [file, t] of [
    [name.rows, rows],
    [name.tokens, tokens],
  ] as const) {
    if (
      t.schema.metadata.get('bfe.dim') !== String(dim) ||
      t.schema.metadata.get('bfe.model_sha256') !== manifest.model.sha256
    ) {
      throw new ArtifactCorruptError(
        `${file}: its metadata names another model or dimension than bank.json`,
      );
    }
  }
  const idName = role === 'memories' ? 'memory_id' : 'query_id';
  const indexName = role === 'memories' ? 'memory_index' : 'query_index';
  const nTokens = int32Column(rows, 'n_tokens');
  const tokenOwner = int32Column(tokens, indexName);
  const offsets = new Int32Array(rows.numRows + 1);
  for (let i = 0; i < rows.numRows; i++) offsets[i + 1] = offsets[i]! + nTokens[i]!;
  if (offsets[rows.numRows] !== tokens.numRows) {
    throw new ArtifactCorruptError(
      `${role}: n_tokens sum to ${offsets[rows.numRows]}, tokens table has ${tokens.numRows} rows`,
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
    tokenPosition: int32Column(tokens, 'position'),
    tokenId: int32Column(tokens, 'token_id'),
    tokenVectors: floatColumn(tokens, 'vector', dim),
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
