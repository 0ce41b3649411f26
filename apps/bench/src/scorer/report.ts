/**
 * The report of `pnpm bench:scorer`: similarities per second per size and query rows (median
 * run), bfe's ratio to the faster peer measured in the same run, top-k agreement, latency
 * percentiles and peak RSS.
 */
import { cpus, totalmem } from 'node:os';
import { median, quantile } from '../shared/stats.js';
import type { Cli } from './cli.js';
import type { SizeResult } from './measure.js';
import type { BfeResult, PeerRuns, PythonResult } from './protocol.js';

/** One bank size and query-row count: each peer's similarities per second (median run). */
export interface ThroughputRow {
  size: number;
  rows: number;
  simsPerSecond: Record<string, number | null>;
  otherCpuCores: Record<string, number | null>;
  ratioToFasterPeer: number | null;
  agreement: { numpy: number | null; faiss: number | null };
}

/** The JSON line of `pnpm bench:scorer` (the tables print it too). */
export type ScorerReport = ReturnType<typeof summarize>;

/** Every peer's numbers per size, ratios taken within the same run. */
export function summarize(cli: Cli, sizes: readonly SizeResult[]) {
  const table: ThroughputRow[] = [];
  for (const s of sizes) {
    const peers: Record<string, PeerRuns> = {};
    if (s.bfe?.ok) peers.bfe = s.bfe.peers.bfe;
    if (s.python?.ok) Object.assign(peers, s.python.peers);
    for (const [ri, rows] of cli.rows.entries()) {
      const simsPerSecond: Record<string, number | null> = {};
      const other: Record<string, number | null> = {};
      for (const name of ['bfe', 'numpy', 'faiss']) {
        const run = peers[name]?.runs[ri];
        if (run === undefined) {
          simsPerSecond[name] = null;
          other[name] = null;
          continue;
        }
        const sec = median(run.seconds);
        simsPerSecond[name] = (rows * s.size) / sec;
        const totalSec = run.seconds.reduce((a, b) => a + b, 0);
        other[name] =
          run.otherCpuSeconds.length > 0
            ? run.otherCpuSeconds.reduce((a, b) => a + b, 0) / totalSec
            : null;
      }
      const peerBest = Math.max(simsPerSecond.numpy ?? 0, simsPerSecond.faiss ?? 0);
      table.push({
        size: s.size,
        rows,
        simsPerSecond,
        otherCpuCores: other,
        ratioToFasterPeer:
          simsPerSecond.bfe != null && peerBest > 0 ? simsPerSecond.bfe / peerBest : null,
        agreement: {
          numpy: ri === 0 ? agreement(peers.bfe, peers.numpy) : null,
          faiss: ri === 0 ? agreement(peers.bfe, peers.faiss) : null,
        },
      });
    }
  }
  const latency: Record<string, { p50: number; p90: number; min: number; runs: number }> = {};
  for (const s of sizes) {
    for (const r of [s.bfe, s.python]) {
      if (!r?.ok || r.latencyMs === null) continue;
      for (const [name, ms] of Object.entries(r.latencyMs)) {
        latency[name] = {
          p50: median(ms),
          p90: quantile(ms, 0.9),
          min: Math.min(...ms),
          runs: ms.length,
        };
      }
    }
  }
  const rss = sizes.map((s) => ({
    size: s.size,
    streamed: s.streamed,
    bankMb: (s.size * cli.dim * 4) / 2 ** 20,
    bfe: s.bfe?.ok
      ? {
          baseMb: s.bfe.baseRssMb,
          peakMb: s.bfe.peakRssMb,
          generationSeconds: s.bfe.generationSeconds,
          passes: s.bfe.passes,
        }
      : null,
    python: s.python?.ok
      ? {
          baseMb: s.python.baseRssMb,
          peakMb: s.python.peakRssMb,
          generationSeconds: s.python.generationSeconds,
        }
      : null,
  }));
  const failures = sizes.flatMap((s) =>
    [s.bfe, s.python].flatMap((r, i) =>
      r !== undefined && !r.ok
        ? [{ size: s.size, peer: i === 0 ? 'bfe' : 'python', error: r.error }]
        : [],
    ),
  );
  const versions = {
    ...(sizes.find((s) => s.bfe?.ok)?.bfe as BfeResult | undefined)?.versions,
    ...(sizes.find((s) => s.python?.ok)?.python as PythonResult | undefined)?.versions,
  };
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: totalmem() / 2 ** 30,
  };
  const json = {
    machine,
    settings: {
      k: cli.k,
      dim: cli.dim,
      chunkSize: cli.chunkSize,
      pool: cli.pool,
      threads: cli.threads,
    },
    throughput: table,
    latencyMs: latency,
    rss,
    failures,
    versions,
  };
  return json;
}

/** Mean fraction of bfe's top-k ids (per sampled row) that the peer also returned. */
function agreement(a: PeerRuns | undefined, b: PeerRuns | undefined): number | null {
  if (a === undefined || b === undefined || a.indices.length === 0) return null;
  let sum = 0;
  a.indices.forEach((row, r) => {
    const other = new Set(b.indices[r] ?? []);
    sum += row.filter((i) => other.has(i)).length / row.length;
  });
  return sum / a.indices.length;
}
