// The clustered index beside its peers at equal recall, in one run: for each bfe setting, each
// peer's p50 at bfe's recall on as many threads, interpolated linearly in recall between the
// peer's two settings around it (a peer that never brackets it is left out, not extrapolated).
import { interpolate } from './matched.js';

/** A row of the bench's JSON: bfe's (`ivf`) or a peer's (faiss's field names). */
export interface RunResult {
  readonly backend: string;
  readonly threads?: number;
  readonly recall?: number;
  readonly p50Ms?: number;
  readonly p50_ms?: number;
  readonly centroids?: number;
  readonly nprobe?: number;
  readonly centroidProduct?: string;
}

const p50Of = (r: RunResult): number | undefined => r.p50Ms ?? r.p50_ms;

/**
 * One line per bfe setting: its recall and p50, and the fastest peer's p50 at that recall on the
 * same thread count with its ratio to bfe's (above 1: bfe is faster), or that no peer brackets it.
 */
export function equalRecallLines(results: readonly RunResult[]): string[] {
  const peers = new Map<string, { x: number; y: number }[]>();
  for (const r of results) {
    const p50 = p50Of(r);
    if (!r.backend.startsWith('faiss') || r.recall === undefined || p50 === undefined) continue;
    const key = `${r.backend}\u0000${r.threads ?? 1}`;
    peers.set(key, [...(peers.get(key) ?? []), { x: r.recall, y: p50 }]);
  }
  const lines: string[] = [];
  for (const r of results) {
    const p50 = p50Of(r);
    if (r.backend !== 'ivf' || r.recall === undefined || p50 === undefined) continue;
    const threads = r.threads ?? 1;
    let fastest: { name: string; ms: number } | undefined;
    for (const [key, points] of peers) {
      const [name, t] = key.split('\u0000') as [string, string];
      if (Number(t) !== threads) continue;
      const ms = interpolate(points, r.recall);
      if (ms !== undefined && (fastest === undefined || ms < fastest.ms)) fastest = { name, ms };
    }
    const setting = `${r.centroids} centroids, nprobe ${r.nprobe}, ${r.centroidProduct ?? 'fp32'}`;
    const head = `equal recall, ${threads} thread(s): bfe ${setting}: ${r.recall.toFixed(4)} in ${p50.toFixed(1)} ms`;
    lines.push(
      fastest === undefined
        ? `${head}; no peer brackets it`
        : `${head}; fastest peer there: ${fastest.name} ${fastest.ms.toFixed(1)} ms (×${(fastest.ms / p50).toFixed(2)})`,
    );
  }
  return lines;
}
