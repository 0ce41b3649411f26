// The clustered residual index as one byte string: a JSON header, then its arrays, 8-aligned.
import { closeSync, openSync, readSync } from 'node:fs';
import type { IvfData, ResidualBits } from './train.js';

/** Version 2: codes in blocks of 16 places (`IvfData.codes`). */
const MAGIC = 'BFEIVF02';

interface Header {
  readonly dim: number;
  readonly residualBits: ResidualBits;
  readonly centroids: number;
  readonly tokens: number;
  readonly sections: readonly number[];
}

const pad8 = (n: number): number => (n + 7) & ~7;

/**
 * The index's bytes: `BFEIVF01`, a uint32 header length, the JSON header, then centroids,
 * weights (float32), cluster offsets, tokens (int32) and codes (uint8), each at an 8-byte
 * boundary. The same index gives the same bytes (the build's determinism is checked on them).
 *
 * @example
 * const bytes = ivfBytes(data); // Uint8Array
 * ivfFromBytes(bytes).codes; // the same codes, a view into `bytes`
 */
export function ivfBytes(data: IvfData): Uint8Array {
  const arrays = [data.centroids, data.weights, data.clusterOffsets, data.tokens, data.codes];
  const header: Header = {
    dim: data.dim,
    residualBits: data.residualBits,
    centroids: data.clusterOffsets.length - 1,
    tokens: data.tokens.length,
    sections: arrays.map((a) => a.byteLength),
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  let at = pad8(MAGIC.length + 4 + json.length);
  const total = arrays.reduce((n, a) => pad8(n + a.byteLength), at);
  const out = new Uint8Array(total);
  out.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(MAGIC.length, json.length, true);
  out.set(json, MAGIC.length + 4);
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at = pad8(at + a.byteLength);
  }
  return out;
}

/** Reads {@link ivfBytes}' output; the arrays are views into `bytes` (8-aligned in it). */
export function ivfFromBytes(bytes: Uint8Array): IvfData {
  if (new TextDecoder().decode(bytes.subarray(0, MAGIC.length)) !== MAGIC) {
    throw new Error('not a bfe IVF index (bad magic)');
  }
  if (bytes.byteOffset % 8 !== 0) throw new Error('IVF bytes must start 8-aligned');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = view.getUint32(MAGIC.length, true);
  const header = JSON.parse(
    new TextDecoder().decode(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + len)),
  ) as Header;
  let at = pad8(MAGIC.length + 4 + len);
  let section = 0;
  const take = (): { offset: number; length: number } => {
    const length = header.sections[section++]!;
    const offset = bytes.byteOffset + at;
    at = pad8(at + length);
    if (offset + length > bytes.byteOffset + bytes.byteLength) {
      throw new Error('IVF bytes are truncated');
    }
    return { offset, length };
  };
  const f32 = (): Float32Array => {
    const s = take();
    return new Float32Array(bytes.buffer, s.offset, s.length / 4);
  };
  const i32 = (): Int32Array => {
    const s = take();
    return new Int32Array(bytes.buffer, s.offset, s.length / 4);
  };
  const centroids = f32();
  const weights = f32();
  const clusterOffsets = i32();
  const tokens = i32();
  const c = take();
  return {
    dim: header.dim,
    residualBits: header.residualBits,
    centroids,
    weights,
    clusterOffsets,
    tokens,
    codes: new Uint8Array(bytes.buffer, c.offset, c.length),
  };
}

/** An `ivf.bin` opened by position: every array but the codes, and where the codes are. */
export interface IvfFile {
  readonly data: Omit<IvfData, 'codes'>;
  /** Copies the codes into `target` (their length), read by position from the file. */
  readCodes(target: Uint8Array): void;
}

/**
 * Opens {@link ivfBytes}' output in a file without reading it whole: the header and the small
 * arrays (centroids, buckets, offsets, token ids) read into their own arrays, the codes left
 * in the file until {@link IvfFile.readCodes} copies them (into the scanner's memory).
 */
export function openIvfFile(path: string): IvfFile {
  const fd = openSync(path, 'r');
  try {
    const read = (at: number, length: number): Uint8Array<ArrayBuffer> => {
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const n = readSync(fd, out, done, length - done, at + done);
        if (n === 0) throw new Error('IVF file is truncated');
        done += n;
      }
      return out;
    };
    const head = read(0, MAGIC.length + 4);
    if (new TextDecoder().decode(head.subarray(0, MAGIC.length)) !== MAGIC) {
      throw new Error('not a bfe IVF index (bad magic)');
    }
    const len = new DataView(head.buffer).getUint32(MAGIC.length, true);
    const header = JSON.parse(new TextDecoder().decode(read(MAGIC.length + 4, len))) as Header;
    let at = pad8(MAGIC.length + 4 + len);
    const starts = header.sections.map((length) => {
      const start = at;
      at = pad8(at + length);
      return start;
    });
    const section = (i: number): ArrayBuffer => read(starts[i]!, header.sections[i]!).buffer;
    const data = {
      dim: header.dim,
      residualBits: header.residualBits,
      centroids: new Float32Array(section(0)),
      weights: new Float32Array(section(1)),
      clusterOffsets: new Int32Array(section(2)),
      tokens: new Int32Array(section(3)),
    };
    const codesAt = starts[4]!;
    const codesLength = header.sections[4]!;
    return {
      data,
      readCodes(target: Uint8Array): void {
        if (target.length !== codesLength) throw new Error('IVF codes: wrong target length');
        const codesFd = openSync(path, 'r');
        try {
          for (let done = 0; done < codesLength;) {
            const n = readSync(
              codesFd,
              target,
              done,
              Math.min(1 << 26, codesLength - done),
              codesAt + done,
            );
            if (n === 0) throw new Error('IVF file is truncated');
            done += n;
          }
        } finally {
          closeSync(codesFd);
        }
      },
    };
  } finally {
    closeSync(fd);
  }
}
