// The clustered residual index's probe: centroid order per query row, the per-byte lookup table
// of the query against the residual buckets, and the fused decompress-and-score scan.
import type { IvfData } from './train.js';

/** 2-bit tables: the two dimension pairs of one byte, 16 entries each (scratch). */
const pair = new Float64Array(32);

/**
 * `lut [bytes × 256]` for one query row `q[at..at+dim)`: entry `(byte, v)` is
 * `Σ_i q[d_i] · weights[d_i][bucket_i(v)]` over the `8 / bits` dimensions packed in byte value
 * `v`, so a token's residual dot product is one lookup per code byte.
 */
export function queryTable(
  data: IvfData,
  q: Float32Array,
  at: number,
  lut: Float32Array,
): Float32Array {
  const { dim, residualBits: bits, weights } = data;
  const buckets = 1 << bits;
  const bytes = (dim * bits) / 8;
  for (let byte = 0; byte < bytes; byte++) {
    const base = byte * 256;
    if (bits === 4) {
      const d0 = byte * 2;
      const q0 = q[at + d0]!;
      const q1 = q[at + d0 + 1]!;
      for (let v = 0; v < 256; v++) {
        lut[base + v] =
          q0 * weights[d0 * buckets + (v & 15)]! + q1 * weights[(d0 + 1) * buckets + (v >> 4)]!;
      }
    } else {
      // Two 16-entry tables (dimension pairs), then each byte value as the sum of its nibbles'.
      const d0 = byte * 4;
      for (let v = 0; v < 16; v++) {
        pair[v] =
          q[at + d0]! * weights[d0 * buckets + (v & 3)]! +
          q[at + d0 + 1]! * weights[(d0 + 1) * buckets + (v >> 2)]!;
        pair[16 + v] =
          q[at + d0 + 2]! * weights[(d0 + 2) * buckets + (v & 3)]! +
          q[at + d0 + 3]! * weights[(d0 + 3) * buckets + (v >> 2)]!;
      }
      for (let v = 0; v < 256; v++) lut[base + v] = pair[v & 15]! + pair[16 + (v >> 4)]!;
    }
  }
  return lut;
}

/**
 * The clusters of one query row in probe order: centroid score descending, equal scores by the
 * smaller cluster id; the first `n` only (a partial selection), or all when `n` ≥ the count.
 */
export function probeOrder(scores: Float32Array, at: number, count: number, n: number): Int32Array {
  const before = (a: number, b: number): boolean => {
    const sa = scores[at + a]!;
    const sb = scores[at + b]!;
    return sa !== sb ? sa > sb : a < b;
  };
  if (n >= count) {
    const all = Int32Array.from({ length: count }, (_, i) => i);
    const s = Array.from(all).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
    return Int32Array.from(s);
  }
  const out = new Int32Array(n);
  let kept = 0;
  for (let c = 0; c < count; c++) {
    if (kept === n && !before(c, out[n - 1]!)) continue;
    let p = kept === n ? n - 1 : kept++;
    while (p > 0 && before(c, out[p - 1]!)) {
      out[p] = out[p - 1]!;
      p--;
    }
    out[p] = c;
  }
  return out;
}

/**
 * The best `size` (approximate score, layout place) pairs seen: a binary min-heap on
 * (score, then larger place first out), so equal scores keep the smaller place.
 */
export class ApproxTop {
  readonly places: Int32Array;
  readonly scores: Float64Array;
  count = 0;
  readonly size: number;

  constructor(size: number) {
    this.size = size;
    this.places = new Int32Array(size);
    this.scores = new Float64Array(size);
  }

  reset(): void {
    this.count = 0;
  }

  /** The score a new pair must beat once full (−Infinity before). */
  get floor(): number {
    return this.count < this.size ? -Infinity : this.scores[0]!;
  }

  /** `a` leaves the heap before `b`. */
  #worse(sa: number, pa: number, sb: number, pb: number): boolean {
    return sa !== sb ? sa < sb : pa > pb;
  }

  push(score: number, place: number): void {
    const { places, scores } = this;
    if (this.count < this.size) {
      let i = this.count++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.#worse(score, place, scores[parent]!, places[parent]!)) break;
        scores[i] = scores[parent]!;
        places[i] = places[parent]!;
        i = parent;
      }
      scores[i] = score;
      places[i] = place;
      return;
    }
    if (this.#worse(score, place, scores[0]!, places[0]!)) return;
    let i = 0;
    const n = this.count;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && this.#worse(scores[r]!, places[r]!, scores[l]!, places[l]!) ? r : l;
      if (!this.#worse(scores[child]!, places[child]!, score, place)) break;
      scores[i] = scores[child]!;
      places[i] = places[child]!;
      i = child;
    }
    scores[i] = score;
    places[i] = place;
  }
}

/**
 * Scans layout places `from..to-1` (one cluster, centroid score `base`) into `top`: each
 * token's approximate similarity is `base + Σ_byte lut[byte · 256 + code]`, decompression fused
 * into the dot product; with `allowed`, a place whose memory (`memoryOf[tokens[p]]`) is not
 * allowed is skipped. Returns the places that were candidates.
 */
export function scanCluster(
  data: IvfData,
  lut: Float32Array,
  base: number,
  from: number,
  to: number,
  top: ApproxTop,
  allowed: Uint8Array | undefined,
  memoryOf: Int32Array,
): number {
  const codes = data.codes;
  const tokens = data.tokens;
  const bytes = (data.dim * data.residualBits) / 8;
  const end = bytes * 256;
  const quads = (bytes >> 2) * 1024;
  let seen = 0;
  let floor = top.floor;
  for (let p = from; p < to; p++) {
    if (allowed !== undefined && allowed[memoryOf[tokens[p]!]!] === 0) continue;
    seen++;
    // Four independent sums: the lookups' latencies overlap instead of chaining.
    let s0 = base;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let at = p * bytes;
    let l = 0;
    for (; l < quads; l += 1024, at += 4) {
      s0 += lut[l + codes[at]!]!;
      s1 += lut[l + 256 + codes[at + 1]!]!;
      s2 += lut[l + 512 + codes[at + 2]!]!;
      s3 += lut[l + 768 + codes[at + 3]!]!;
    }
    for (; l < end; l += 256, at++) s0 += lut[l + codes[at]!]!;
    const s = s0 + s1 + (s2 + s3);
    if (s < floor) continue;
    top.push(s, p);
    floor = top.floor;
  }
  return seen;
}
