// The clustered residual index's probe: centroid order per query row and the running top of
// approximate similarities (the scan itself: `scan-cluster.ts`, `wasm-scan.ts`).

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
  // The last kept cluster's score, so that most clusters are passed over by one comparison.
  let worst = -Infinity;
  for (let c = 0; c < count; c++) {
    const sc = scores[at + c]!;
    if (kept === n && !(sc > worst)) continue; // equal: the kept one has the smaller id
    let p = kept === n ? n - 1 : kept++;
    while (p > 0 && before(c, out[p - 1]!)) {
      out[p] = out[p - 1]!;
      p--;
    }
    out[p] = c;
    worst = scores[at + out[kept - 1]!]!;
  }
  return out;
}

/**
 * The best `size` (approximate score, key) pairs seen — the key a bank token (or a layout
 * place): a binary min-heap on (score, then larger key first out), so equal scores keep the
 * smaller key.
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
