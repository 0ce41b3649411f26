import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { LOCK_FILE, StoreLockedError, formatLock, parseLock } from './log/lock.js';
import { MemoryStore } from './store.js';
import { rng } from '@bfe/index/testing';
import { DEFAULT_STORE_CODEC } from './log/settings.js';
import {
  CODEC_TOLERANCE,
  holds,
  openings,
  runWorker,
  verify,
  type Model,
} from './testing/crash-harness.js';
import { fakeEmbedder } from './testing/index.js';

// The crash test: a writer process is killed with SIGKILL at seeded random moments (and
// at failpoints inside flush and compaction); after each kill the store is reopened and must
// hold exactly the acknowledged writes (plus, at most, the one call in flight, whole), with
// bit-identical vectors, and accept new writes (the harness: src/testing/crash-harness.ts).

describe('crash safety (SIGKILL)', () => {
  it('keeps every acknowledged write and nothing partial across 52 random kills', async () => {
    const rand = rng(20261201);
    // Four stores side by side, 13 rounds each: 52 kills, in a bounded time.
    const lanes = Array.from({ length: 4 }, async (_, lane) => {
      const dir = tmpDir(`bfe-crash-${lane}-`);
      let model: Model = new Map();
      let acked = 0;
      for (let round = 0; round < 13; round++) {
        const prefix = `l${lane}r${round}`;
        // A seeded number of acknowledgements first, then a seeded moment: the kills land
        // after real work (and mid-call or between calls) however busy the machine is.
        const kill = { acks: Math.floor(rand() * 16), ms: Math.floor(rand() * 40) };
        const outcome = await runWorker(
          { dir, prefix, seed: lane * 100 + round, mode: 'write' },
          kill,
        );
        expect(outcome.acked.length).toBeGreaterThanOrEqual(kill.acks);
        acked += outcome.acked.length;
        model = await verify(dir, model, outcome, prefix);
      }
      return acked;
    });
    const acked = await Promise.all(lanes);
    expect(acked.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  }, 240_000);

  it('refuses a second writer while the first process lives, and takes over after its kill', async () => {
    const dir = tmpDir('bfe-crash-lock-');
    let refused: unknown;
    const outcome = await runWorker(
      { dir, prefix: 'k', seed: 3, mode: 'write' },
      50,
      undefined,
      async (pid) => {
        refused = await MemoryStore.open(dir, { embedder: fakeEmbedder() }).then(
          (s) => s.close(),
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(StoreLockedError);
        expect((refused as StoreLockedError).pid).toBe(pid);
      },
    );
    expect(refused).toBeInstanceOf(StoreLockedError);
    await verify(dir, new Map(), outcome, 'lock');
  });

  it('opens a store whose SIGKILLed writer left a LOCK naming a pid that now runs again', async () => {
    const dir = tmpDir('bfe-crash-pid-reuse-');
    let written = '';
    const outcome = await runWorker(
      { dir, prefix: 'r', seed: 5, mode: 'write' },
      0,
      undefined,
      async () => {
        written = readFileSync(join(dir, LOCK_FILE), 'utf8');
      },
    );
    const owner = parseLock(written);
    expect(owner?.pid).toBeGreaterThan(0);
    // The restarted writer got the dead one's pid (PID 1 in a container): the LOCK on disk is
    // the killed process's own, its pid now naming a live process — this one.
    writeFileSync(join(dir, LOCK_FILE), formatLock({ ...owner!, pid: process.pid }));
    await verify(dir, new Map(), outcome, 'pid-reuse');
  });

  it.each([
    'wal-written',
    'flush-segments',
    'flush-manifest',
    'compact-segment',
    'compact-manifest',
  ])('recovers a writer killed at %s', async (point) => {
    const dir = tmpDir('bfe-crash-fault-');
    const outcome = await runWorker(
      { dir, prefix: 'f', seed: 7, mode: 'compact' },
      undefined,
      point,
    );
    expect(outcome.stderr).toContain(`fault: killed at ${point}`);
    const model = await verify(dir, new Map(), outcome, `fault-${point}`);
    // A second writer after the crash compacts the same store cleanly, losing nothing.
    const store = await MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0 });
    await store.compact();
    expect(await holds(store, model, true, CODEC_TOLERANCE[DEFAULT_STORE_CODEC])).toBe(true);
    await store.close();
  });

  it('keeps sq4 segments whole: random kills and kills inside flush and compaction', async () => {
    const rand = rng(20261205);
    const dir = tmpDir('bfe-crash-codec-');
    let model: Model = new Map();
    for (let round = 0; round < 6; round++) {
      const prefix = `c${round}`;
      const kill = { acks: Math.floor(rand() * 16), ms: Math.floor(rand() * 40) };
      const outcome = await runWorker(
        { dir, prefix, seed: 700 + round, mode: 'write', codec: 'sq4' },
        kill,
      );
      model = await verify(dir, model, outcome, prefix, false, 'sq4');
    }
    for (const point of [
      'flush-segments',
      'flush-manifest',
      'compact-segment',
      'compact-manifest',
    ]) {
      const pointDir = tmpDir('bfe-crash-codec-fault-');
      const outcome = await runWorker(
        { dir: pointDir, prefix: 'f', seed: 7, mode: 'compact', codec: 'sq4' },
        undefined,
        point,
      );
      expect(outcome.stderr).toContain(`fault: killed at ${point}`);
      await verify(pointDir, new Map(), outcome, `codec-${point}`, false, 'sq4');
    }
    // Reopened with another codec, the store refuses and says how to migrate.
    await expect(MemoryStore.open(dir, { embedder: fakeEmbedder(), codec: 'sq8' })).rejects.toThrow(
      /keeps token states as sq4; the store was opened with codec sq8/,
    );
  }, 240_000);

  it('keeps the HNSW graphs derived data: kills at random and inside graph saves lose nothing', async () => {
    const rand = rng(20261202);
    const dir = tmpDir('bfe-crash-graph-');
    let model: Model = new Map();
    for (let round = 0; round < 4; round++) {
      const prefix = `g${round}`;
      const outcome = await runWorker(
        { dir, prefix, seed: 500 + round, mode: 'write', graph: true },
        300 + Math.floor(rand() * 700),
      );
      model = await verify(dir, model, outcome, prefix, true);
    }
    for (const point of ['graph-file', 'graph-meta', 'graph-apply']) {
      const outcome = await runWorker(
        { dir, prefix: point, seed: 600, mode: 'write', graph: true },
        undefined,
        point,
      );
      expect(outcome.stderr).toContain(`fault: killed at ${point}`);
      model = await verify(dir, model, outcome, point, true);
    }
    // Graph files were found again after kills (not only rebuilt from nothing).
    expect(openings).toContain('loaded');
  }, 240_000);
});
