// The clustered index beside its peers at equal recall, in one run: for each bfe setting, each
// peer's p50 at bfe's recall on as many threads, read off the peer's speed–recall envelope as the
// HNSW sweep reads it (`qpsAtRecall`: interpolated between the settings around bfe's recall, or
// the fastest setting above it; a peer that never reaches it is left out).
import { qpsAtRecall, type SweepPoint } from './matched.js';

/** A row of the bench's JSON: bfe's (`ivf`) or a peer's (faiss's field names). */
export interface RunResult {
  readonly backend: string;
  readonly threads?: number;
  readonly recall?: number;
  readonly p50Ms?: number;
  readonly p50_ms?: number;
  readonly centroids?: number;
  readonly nprobe?: number;
  readonly probeSlack?: number;
  readonly maxProbe?: number;
  readonly centroidProduct?: string;
}

const p50Of = (r: RunResult): number | undefined => r.p50Ms ?? r.p50_ms;

/**
 * One line per bfe setting: its recall and p50, and the fastest peer's p50 at that recall on the
 * same thread count with its ratio to bfe's (above 1: bfe is faster), or that no peer reaches it.
 */
export function equalRecallLines(results: readonly RunResult[]): string[] {
  /** Per thread count, each peer's settings. */
  const peers = new Map<number, Map<string, SweepPoint[]>>();
  for (const r of results) {
    const p50 = p50Of(r);
    if (!r.backend.startsWith('faiss') || r.recall === undefined || p50 === undefined) continue;
    const byName = peers.get(r.threads ?? 1) ?? new Map<string, SweepPoint[]>();
    peers.set(r.threads ?? 1, byName);
    const points = byName.get(r.backend) ?? [];
    byName.set(r.backend, points);
    // As queries per second, the envelope's measure (ef unused here).
    points.push({ ef: 0, qps: 1000 / p50, recall: r.recall });
  }
  const lines: string[] = [];
  for (const r of results) {
    const p50 = p50Of(r);
    if (r.backend !== 'ivf' || r.recall === undefined || p50 === undefined) continue;
    const threads = r.threads ?? 1;
    let fastest: { name: string; ms: number } | undefined;
    for (const [name, points] of peers.get(threads) ?? []) {
      const qps = qpsAtRecall(points, r.recall);
      const ms = qps === undefined ? undefined : 1000 / qps;
      if (ms !== undefined && (fastest === undefined || ms < fastest.ms)) fastest = { name, ms };
    }
    const slack =
      r.probeSlack === undefined ? '' : `, slack ${r.probeSlack} ≤ ${r.maxProbe ?? '?'}`;
    const setting = `${r.centroids} centroids, nprobe ${r.nprobe}${slack}, ${r.centroidProduct ?? 'fp32'}`;
    const head = `equal recall, ${threads} thread(s): bfe ${setting}: ${r.recall.toFixed(4)} in ${p50.toFixed(1)} ms`;
    lines.push(
      fastest === undefined
        ? `${head}; no peer reaches it`
        : `${head}; fastest peer there: ${fastest.name} ${fastest.ms.toFixed(1)} ms (×${(fastest.ms / p50).toFixed(2)})`,
    );
  }
  return lines;
}
