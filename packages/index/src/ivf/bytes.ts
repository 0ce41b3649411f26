// The clustered residual index as one byte string: a JSON header, then its arrays, 8-aligned.
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { readFully } from './paged.js';
import type { IvfData, IvfResidualStats, IvfTrainParams } from './train.js';

/**
 * Version 3: residual cutoffs, deleted memories, residual statistics and training parameters
 * beside version 2's arrays (what appends, tombstones and re-clustering need). Version 2 files
 * (no cutoffs) are still read: searched, not appended to.
 */
const MAGIC = 'BFEIVF03';
const MAGIC_V2 = 'BFEIVF02';

const headerSchema = z.object({
  dim: z.number().int().positive(),
  residualBits: z.union([z.literal(2), z.literal(4)]),
  centroids: z.number().int().positive(),
  tokens: z.number().int().nonnegative(),
  sections: z.array(z.number().int().nonnegative()),
  residuals: z
    .object({
      trainedMean: z.number(),
      appendedSum: z.number(),
      appendedTokens: z.number().int().nonnegative(),
    })
    .optional(),
  params: z
    .object({
      centroids: z.number().int().positive(),
      residualBits: z.union([z.literal(2), z.literal(4)]),
      sample: z.number().int().positive().optional(),
      iterations: z.number().int().nonnegative().optional(),
      seed: z.number().int().optional(),
    })
    .optional(),
});
type Header = z.infer<typeof headerSchema>;

/** Section order of a version 3 file (the codes last, so the small arrays come first). */
const SECTIONS = ['centroids', 'weights', 'cutoffs', 'offsets', 'tokens', 'deleted', 'codes'];
const SECTIONS_V2 = ['centroids', 'weights', 'offsets', 'tokens', 'codes'];

const pad8 = (n: number): number => n + ((8 - (n % 8)) % 8);

/** Bytes a `write` call is given at most (the file system's calls take under 2 GiB). */
const WRITE_BYTES = 1 << 30;

/**
 * The index's bytes: `BFEIVF03`, a uint32 header length, the JSON header (dims, residual
 * statistics, training parameters), then centroids, weights, cutoffs (float32), cluster offsets,
 * tokens, deleted memories (int32) and codes (uint8), each at an 8-byte boundary. The same index
 * gives the same bytes (the build's determinism is checked on them).
 *
 * @example
 * const bytes = ivfBytes(data); // Uint8Array
 * ivfFromBytes(bytes).codes; // the same codes, a view into `bytes`
 */
export function ivfBytes(data: IvfData): Uint8Array {
  const parts = ivfParts(data);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * {@link ivfBytes}' bytes in pieces (magic and header, then each array and its padding), views
 * of the arrays rather than copies: what {@link writeIvfFile} writes one after another.
 */
function ivfParts(data: IvfData): Uint8Array[] {
  const arrays = [
    data.centroids,
    data.weights,
    data.cutoffs,
    data.clusterOffsets,
    data.tokens,
    data.deleted,
    data.codes,
  ];
  const header: Header = {
    dim: data.dim,
    residualBits: data.residualBits,
    centroids: data.clusterOffsets.length - 1,
    tokens: data.tokens.length,
    sections: arrays.map((a) => a.byteLength),
    residuals: { ...data.residuals },
    ...(data.params === undefined ? {} : { params: { ...data.params } }),
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(pad8(MAGIC.length + 4 + json.length));
  head.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(head.buffer).setUint32(MAGIC.length, json.length, true);
  head.set(json, MAGIC.length + 4);
  const parts: Uint8Array[] = [head];
  for (const a of arrays) {
    parts.push(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    if (pad8(a.byteLength) > a.byteLength)
      parts.push(new Uint8Array(pad8(a.byteLength) - a.byteLength));
  }
  return parts;
}

/**
 * Writes {@link ivfBytes}' bytes to `path` (created or truncated, then fsynced) piece by piece,
 * without the one copy of the whole index that {@link ivfBytes} makes: what an index of
 * billions of code bytes is saved with.
 */
export function writeIvfFile(path: string, data: IvfData): void {
  const fd = openSync(path, 'w');
  try {
    for (const part of ivfParts(data)) {
      for (let done = 0; done < part.length;) {
        done += writeSync(fd, part, done, Math.min(WRITE_BYTES, part.length - done));
      }
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The magic's version (3 or 2), or a thrown error. */
function versionOf(magic: string): 2 | 3 {
  if (magic === MAGIC) return 3;
  if (magic === MAGIC_V2) return 2;
  throw new Error('not a bfe IVF index (bad magic)');
}

function parseHeader(json: string, version: 2 | 3): Header {
  const parsed = headerSchema.safeParse(JSON.parse(json));
  if (!parsed.success) throw new Error(`IVF header: ${z.prettifyError(parsed.error)}`);
  const want = version === 3 ? SECTIONS.length : SECTIONS_V2.length;
  if (parsed.data.sections.length !== want)
    throw new Error(`IVF header: ${want} sections expected`);
  return parsed.data;
}

/** Where each section starts, from the end of the header on. */
function sectionStarts(header: Header, headerEnd: number): Map<string, [number, number]> {
  const names = header.sections.length === SECTIONS.length ? SECTIONS : SECTIONS_V2;
  let at = pad8(headerEnd);
  const out = new Map<string, [number, number]>();
  header.sections.forEach((length, i) => {
    out.set(names[i]!, [at, length]);
    at = pad8(at + length);
  });
  return out;
}

/** A `BFEIVF02` file keeps no residual statistics (nor cutoffs: nothing is appended to it). */
const NO_RESIDUALS: IvfResidualStats = {
  trainedMean: 0,
  appendedSum: 0,
  appendedTokens: 0,
};

/** The header's training parameters without absent keys. */
function trainParams(p: NonNullable<Header['params']>): IvfTrainParams {
  return {
    centroids: p.centroids,
    residualBits: p.residualBits,
    ...(p.sample === undefined ? {} : { sample: p.sample }),
    ...(p.iterations === undefined ? {} : { iterations: p.iterations }),
    ...(p.seed === undefined ? {} : { seed: p.seed }),
  };
}

/** Every array but the codes, from a section reader (views or copies, as `f32`/`i32` make them). */
function assemble(
  header: Header,
  f32: (name: string) => Float32Array,
  i32: (name: string) => Int32Array,
  has: (name: string) => boolean,
): Omit<IvfData, 'codes'> {
  return {
    dim: header.dim,
    residualBits: header.residualBits,
    centroids: f32('centroids'),
    weights: f32('weights'),
    cutoffs: has('cutoffs') ? f32('cutoffs') : new Float32Array(0),
    clusterOffsets: i32('offsets'),
    tokens: i32('tokens'),
    deleted: has('deleted') ? i32('deleted') : new Int32Array(0),
    residuals: header.residuals ?? NO_RESIDUALS,
    params: header.params === undefined ? undefined : trainParams(header.params),
  };
}

/** Reads {@link ivfBytes}' output; the arrays are views into `bytes` (8-aligned in it). */
export function ivfFromBytes(bytes: Uint8Array): IvfData {
  const version = versionOf(new TextDecoder().decode(bytes.subarray(0, MAGIC.length)));
  if (bytes.byteOffset % 8 !== 0) throw new Error('IVF bytes must start 8-aligned');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = view.getUint32(MAGIC.length, true);
  const text = new TextDecoder().decode(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + len));
  const header = parseHeader(text, version);
  const starts = sectionStarts(header, MAGIC.length + 4 + len);
  const take = (name: string): { offset: number; length: number } => {
    const [at, length] = starts.get(name)!;
    if (at + length > bytes.byteLength) throw new Error('IVF bytes are truncated');
    return { offset: bytes.byteOffset + at, length };
  };
  const f32 = (name: string): Float32Array => {
    const s = take(name);
    return new Float32Array(bytes.buffer, s.offset, s.length / 4);
  };
  const i32 = (name: string): Int32Array => {
    const s = take(name);
    return new Int32Array(bytes.buffer, s.offset, s.length / 4);
  };
  const rest = assemble(header, f32, i32, (name) => starts.has(name));
  const c = take('codes');
  return { ...rest, codes: new Uint8Array(bytes.buffer, c.offset, c.length) };
}

/** An `ivf.bin` opened by position: every array but the codes, and where the codes are. */
export interface IvfFile {
  readonly data: Omit<IvfData, 'codes'>;
  /** The file's byte offset of the codes (blocked layout) and their length. */
  readonly codesAt: number;
  readonly codesLength: number;
}

/**
 * Opens {@link ivfBytes}' output in a file without reading it whole: the header and the small
 * arrays (centroids, buckets, cutoffs, offsets, token ids, deleted memories) read into their
 * own arrays, the codes left in the file (a search reads its probed clusters' blocks by
 * position). Checks that the file holds every byte the header names.
 */
export function openIvfFile(path: string): IvfFile {
  const fd = openSync(path, 'r');
  try {
    const read = (at: number, length: number): Uint8Array<ArrayBuffer> => {
      const out = new Uint8Array(length);
      readFully(fd, out, 0, length, at);
      return out;
    };
    const head = read(0, MAGIC.length + 4);
    const version = versionOf(new TextDecoder().decode(head.subarray(0, MAGIC.length)));
    const len = new DataView(head.buffer).getUint32(MAGIC.length, true);
    const header = parseHeader(new TextDecoder().decode(read(MAGIC.length + 4, len)), version);
    const starts = sectionStarts(header, MAGIC.length + 4 + len);
    const section = (name: string): ArrayBuffer => read(...starts.get(name)!).buffer;
    const data = assemble(
      header,
      (name) => new Float32Array(section(name)),
      (name) => new Int32Array(section(name)),
      (name) => starts.has(name),
    );
    const [codesAt, codesLength] = starts.get('codes')!;
    // The last code byte is there (a truncated file fails here, not in a search).
    if (codesLength > 0) read(codesAt + codesLength - 1, 1);
    return { data, codesAt, codesLength };
  } finally {
    closeSync(fd);
  }
}
