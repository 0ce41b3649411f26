// The clustered residual index as one byte string: a JSON header, then its arrays, 8-aligned.
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { fromHalfBits, fromHalfInto, toHalfBits } from '../codecs/fp16.js';
import { readFully } from './paged.js';
import { decodeAssignment, encodePlaceIds } from './place-ids.js';
import type { IvfData, IvfResidualStats, IvfTrainParams } from './train.js';

/**
 * Version 4: the centroids as float16 when every value is one (as trained), and the token ids
 * as each bank token's cluster (`place-ids.ts`) where that is smaller. Version 3 (float32
 * centroids, an int32 id a place) and version 2 files (no cutoffs either: searched, not appended
 * to) are still read.
 */
const MAGIC = 'BFEIVF04';
const MAGIC_V3 = 'BFEIVF03';
const MAGIC_V2 = 'BFEIVF02';
type Version = 2 | 3 | 4;

const headerSchema = z.object({
  dim: z.number().int().positive(),
  residualBits: z.union([z.literal(2), z.literal(4)]),
  centroids: z.number().int().positive(),
  tokens: z.number().int().nonnegative(),
  sections: z.array(z.number().int().nonnegative()),
  /** Version 4: how the centroids and the token ids are stored. */
  centroidBits: z.union([z.literal(16), z.literal(32)]).optional(),
  ids: z.enum(['assignment16', 'assignment32', 'list']).optional(),
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

/** Section order of a version 4 file (the codes last, so the small arrays come first). */
const SECTIONS = ['centroids', 'weights', 'cutoffs', 'offsets', 'ids', 'deleted', 'codes'];
const SECTIONS_V3 = ['centroids', 'weights', 'cutoffs', 'offsets', 'tokens', 'deleted', 'codes'];
const SECTIONS_V2 = ['centroids', 'weights', 'offsets', 'tokens', 'codes'];
const SECTIONS_OF: Record<Version, string[]> = { 2: SECTIONS_V2, 3: SECTIONS_V3, 4: SECTIONS };

const pad8 = (n: number): number => n + ((8 - (n % 8)) % 8);

/** Bytes a `write` call is given at most (the file system's calls take under 2 GiB). */
const WRITE_BYTES = 1 << 30;

/**
 * The index's bytes: `BFEIVF04`, a uint32 header length, the JSON header (dims, residual
 * statistics, training parameters, how centroids and ids are stored), then centroids (float16
 * or float32), weights, cutoffs (float32), cluster offsets (int32), token ids (each bank token's
 * cluster as uint16 or int32, or an int32 token a place), deleted memories (int32) and codes
 * (uint8), each at an 8-byte boundary. The same index gives the same bytes (the build's
 * determinism is checked on them).
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
  const halves = halvesOf(data.centroids);
  const ids = encodePlaceIds(data.clusterOffsets, data.tokens);
  const idArray = ids.kind === 'list' ? ids.tokens : ids.assignment;
  const arrays = [
    halves ?? data.centroids,
    data.weights,
    data.cutoffs,
    data.clusterOffsets,
    idArray,
    data.deleted,
    data.codes,
  ];
  const header: Header = {
    dim: data.dim,
    residualBits: data.residualBits,
    centroids: data.clusterOffsets.length - 1,
    tokens: data.tokens.length,
    sections: arrays.map((a) => a.byteLength),
    centroidBits: halves === undefined ? 32 : 16,
    ids:
      ids.kind === 'list'
        ? 'list'
        : ids.assignment instanceof Uint16Array
          ? 'assignment16'
          : 'assignment32',
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

/** The float16 bits of `centroids` when every value is a float16 (as trained), else undefined. */
function halvesOf(centroids: Float32Array): Uint16Array | undefined {
  const out = new Uint16Array(centroids.length);
  for (let i = 0; i < centroids.length; i++) {
    const h = toHalfBits(centroids[i]!);
    if (!Object.is(fromHalfBits(h), centroids[i])) return undefined;
    out[i] = h;
  }
  return out;
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

/** The magic's version, or a thrown error. */
function versionOf(magic: string): Version {
  if (magic === MAGIC) return 4;
  if (magic === MAGIC_V3) return 3;
  if (magic === MAGIC_V2) return 2;
  throw new Error('not a bfe IVF index (bad magic)');
}

function parseHeader(json: string, version: Version): Header {
  const parsed = headerSchema.safeParse(JSON.parse(json));
  if (!parsed.success) throw new Error(`IVF header: ${z.prettifyError(parsed.error)}`);
  const want = SECTIONS_OF[version].length;
  if (parsed.data.sections.length !== want)
    throw new Error(`IVF header: ${want} sections expected`);
  if (version === 4 && (parsed.data.centroidBits === undefined || parsed.data.ids === undefined))
    throw new Error('IVF header: centroidBits and ids expected');
  return parsed.data;
}

/** Where each section starts, from the end of the header on. */
function sectionStarts(
  header: Header,
  version: Version,
  headerEnd: number,
): Map<string, [number, number]> {
  const names = SECTIONS_OF[version];
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

/** A section's bytes by name (a view or a copy, 8-aligned), or undefined where absent. */
type Sections = (name: string) => Uint8Array | undefined;

const f32Of = (b: Uint8Array): Float32Array =>
  new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
const i32Of = (b: Uint8Array): Int32Array =>
  new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4);
const u16Of = (b: Uint8Array): Uint16Array =>
  new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2);

/**
 * Every array but the codes from a file's sections: float32 ones as views of their bytes,
 * float16 centroids widened and an assignment turned back into the layout's token ids (copies).
 */
function assemble(header: Header, section: Sections): Omit<IvfData, 'codes'> {
  const must = (name: string): Uint8Array => section(name)!;
  const clusterOffsets = i32Of(must('offsets'));
  let centroids = f32Of(must('centroids'));
  if (header.centroidBits === 16) {
    const halves = u16Of(must('centroids'));
    centroids = new Float32Array(halves.length);
    fromHalfInto(centroids, halves);
  }
  let tokens: Int32Array;
  if (header.ids === undefined) tokens = i32Of(must('tokens'));
  else if (header.ids === 'list') tokens = i32Of(must('ids'));
  else {
    const ids = must('ids');
    tokens = decodeAssignment(
      clusterOffsets,
      header.ids === 'assignment16' ? u16Of(ids) : i32Of(ids),
    );
  }
  if (tokens.length !== header.tokens) throw new Error('IVF header: token count disagrees');
  const cutoffs = section('cutoffs');
  const deleted = section('deleted');
  return {
    dim: header.dim,
    residualBits: header.residualBits,
    centroids,
    weights: f32Of(must('weights')),
    cutoffs: cutoffs === undefined ? new Float32Array(0) : f32Of(cutoffs),
    clusterOffsets,
    tokens,
    deleted: deleted === undefined ? new Int32Array(0) : i32Of(deleted),
    residuals: header.residuals ?? NO_RESIDUALS,
    params: header.params === undefined ? undefined : trainParams(header.params),
  };
}

/**
 * Reads {@link ivfBytes}' output; the arrays are views into `bytes` (8-aligned in it), but for
 * float16 centroids and an assignment (decoded into arrays of their own).
 */
export function ivfFromBytes(bytes: Uint8Array): IvfData {
  const version = versionOf(new TextDecoder().decode(bytes.subarray(0, MAGIC.length)));
  if (bytes.byteOffset % 8 !== 0) throw new Error('IVF bytes must start 8-aligned');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = view.getUint32(MAGIC.length, true);
  const text = new TextDecoder().decode(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + len));
  const header = parseHeader(text, version);
  const starts = sectionStarts(header, version, MAGIC.length + 4 + len);
  const section = (name: string): Uint8Array | undefined => {
    const s = starts.get(name);
    if (s === undefined) return undefined;
    const [at, length] = s;
    if (at + length > bytes.byteLength) throw new Error('IVF bytes are truncated');
    return bytes.subarray(at, at + length);
  };
  const rest = assemble(header, section);
  return { ...rest, codes: section('codes')! };
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
    const starts = sectionStarts(header, version, MAGIC.length + 4 + len);
    const section = (name: string): Uint8Array | undefined => {
      const s = starts.get(name);
      return s === undefined ? undefined : read(...s);
    };
    const data = assemble(header, section);
    const [codesAt, codesLength] = starts.get('codes')!;
    // The last code byte is there (a truncated file fails here, not in a search).
    if (codesLength > 0) read(codesAt + codesLength - 1, 1);
    return { data, codesAt, codesLength };
  } finally {
    closeSync(fd);
  }
}
