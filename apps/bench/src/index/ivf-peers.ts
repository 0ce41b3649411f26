// `pnpm bench:big-bank --ivf --ivf-peers`: faiss's IVF indexes and its HNSWFlat graph over the
// same vectors and query rows as bfe's (`python/ivf_peers.py`), recall against the run's exact
// top-64.
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { TokenHits } from '@bfe/index';
import { note } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';

const K = 64;

export interface FaissPeers {
  readonly faiss: string;
  /** The SIMD level faiss ran at (the CPU's widest; `FAISS_SIMD_LEVEL=AVX2` holds it to AVX2). */
  readonly simd: string;
  readonly nlist: number;
  readonly indexes: readonly {
    name: string;
    /** nprobe (IVF) or efSearch (HNSWFlat). */
    nprobe: number;
    threads: number;
    build_s: number;
    bytes_per_token: number;
    p50_ms: number;
    p90_ms: number;
    recall: number;
  }[];
}

/**
 * faiss's IVF indexes over the same vectors and query rows (`python/ivf_peers.py`), with as many
 * lists as the first `--centroids` and the same nprobe values, and its HNSWFlat graph at each
 * `--ivf-peer-ef` on one and two threads; recall against this run's exact.
 */
export function runFaissPeers(
  o: BigBankOptions,
  vectors: Float32Array,
  queries: Float32Array,
  truth: readonly TokenHits[],
  dim: number,
): FaissPeers {
  mkdirSync(o.dir, { recursive: true });
  const file = (name: string): string => join(o.dir, name);
  // In pieces: one write takes at most 2 GiB.
  const write = (name: string, a: Float32Array | Int32Array): void => {
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const fd = openSync(file(name), 'w');
    for (let at = 0; at < bytes.length; at += 1 << 28) {
      writeSync(fd, bytes.subarray(at, Math.min(bytes.length, at + (1 << 28))));
    }
    closeSync(fd);
  };
  write('ivf-vectors.f32', vectors);
  write('ivf-queries.f32', queries.subarray(0, o.queries * o.rows * dim));
  const exact = new Int32Array(o.queries * o.rows * K);
  truth.forEach((t, i) => exact.set(t.tokens, i * o.rows * K));
  write('ivf-exact.i32', exact);
  const script = new URL('../../python/ivf_peers.py', import.meta.url).pathname;
  note(`  faiss peers (${o.python})…`);
  const run = spawnSync(
    o.python,
    [
      script,
      file('ivf-vectors.f32'),
      file('ivf-queries.f32'),
      file('ivf-exact.i32'),
      String(dim),
      String(K),
      String(o.centroids[0]),
      o.nprobe.join(','),
      String(o.rows),
      String(o.ivfSample ?? 64 * o.centroids[0]!),
      String(o.seed),
      String(o.ivfReps),
      o.ivfPeerEf.join(','),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 },
  );
  if (run.status !== 0) throw new Error(`ivf_peers.py failed (${run.status ?? run.signal})`);
  const peers = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as FaissPeers;
  note(`  faiss ${peers.faiss}, SIMD level ${peers.simd}`);
  return peers;
}
