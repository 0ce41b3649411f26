import {
  Field,
  FixedSizeList,
  Float16,
  Float32,
  makeData,
  makeVector,
  tableFromIPC,
  type Table,
  type Vector,
} from 'apache-arrow';
import { ArtifactCorruptError } from './errors.js';

/**
 * Zero-copy `FixedSizeList<Float32, dim>` column over a flat row-major `[n * dim]` array.
 * @example float32ListVector(new Float32Array(6), 3).length // 2 rows of 3
 */
export function float32ListVector(
  values: Float32Array,
  dim: number,
): Vector<FixedSizeList<Float32>> {
  const rows = checkShape(values.length, dim);
  const child = makeData({
    type: new Float32(),
    length: values.length,
    nullCount: 0,
    data: values,
  });
  const type = new FixedSizeList(dim, new Field('item', new Float32(), false));
  return makeVector(makeData({ type, length: rows, nullCount: 0, child }));
}

/** Zero-copy `FixedSizeList<Float16, dim>` column; `bits` are IEEE half floats as `Uint16`. */
export function float16ListVector(bits: Uint16Array, dim: number): Vector<FixedSizeList<Float16>> {
  const rows = checkShape(bits.length, dim);
  const child = makeData({ type: new Float16(), length: bits.length, nullCount: 0, data: bits });
  const type = new FixedSizeList(dim, new Field('item', new Float16(), false));
  return makeVector(makeData({ type, length: rows, nullCount: 0, child }));
}

/**
 * The flat values under a `FixedSizeList` column as one typed array, without copying when the
 * column is a single chunk. Returns `{ values, dim }`.
 */
export function flatListValues(vector: Vector<FixedSizeList<Float32>>): {
  values: Float32Array;
  dim: number;
} {
  const dim = vector.type.listSize;
  if (vector.data.length === 1) {
    const data = vector.data[0]!;
    const child = data.children[0]!;
    const start = data.offset * dim;
    return {
      values: (child.values as Float32Array).subarray(start, start + data.length * dim),
      dim,
    };
  }
  const out = new Float32Array(vector.length * dim);
  let at = 0;
  for (const data of vector.data) {
    const child = data.children[0]!;
    const start = data.offset * dim;
    out.set((child.values as Float32Array).subarray(start, start + data.length * dim), at);
    at += data.length * dim;
  }
  return { values: out, dim };
}

const MAGIC = new TextEncoder().encode('ARROW1');

/**
 * Reads an Arrow IPC *file* from bytes (zero-copy views into `bytes`). A file that is
 * truncated or does not start and end with the Arrow magic is rejected, never half-read.
 */
export function readArrowFile(bytes: Uint8Array, name = 'arrow file'): Table {
  if (!hasMagic(bytes, 0) || !hasMagic(bytes, bytes.length - MAGIC.length)) {
    throw new ArtifactCorruptError(`${name}: not a complete Arrow IPC file (magic bytes missing)`, {
      suggestion: 'The file was truncated or overwritten; delete it and rerun the stage.',
    });
  }
  try {
    return tableFromIPC(bytes);
  } catch (cause) {
    throw new ArtifactCorruptError(`${name}: Arrow IPC file could not be decoded`, { cause });
  }
}

function hasMagic(bytes: Uint8Array, at: number): boolean {
  if (at < 0 || bytes.length < at + MAGIC.length) return false;
  for (let i = 0; i < MAGIC.length; i++) if (bytes[at + i] !== MAGIC[i]) return false;
  return true;
}

function checkShape(length: number, dim: number): number {
  if (!Number.isInteger(dim) || dim <= 0)
    throw new Error(`dim must be a positive integer, got ${dim}`);
  if (length % dim !== 0) throw new Error(`array length ${length} is not a multiple of dim ${dim}`);
  return length / dim;
}
