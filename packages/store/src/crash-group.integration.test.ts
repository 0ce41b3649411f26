import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { runWorker, verify, type Model } from './testing/crash-harness.js';

// Group commit under SIGKILL: eight writer loops in one process write at once (their calls
// share WAL fsyncs), killed at seeded random moments and at the failpoints inside a group's
// append. After each kill every acknowledged call is in the store, every call in flight is
// whole or absent (never some of its memories), the vectors are bit-identical, the lexical
// index matches the memories, and the store accepts new writes.

const WRITERS = 8;

describe('crash safety with group commit (SIGKILL)', () => {
  it('keeps every acknowledged write of concurrent writers across random kills', async () => {
    const rand = rng(20261203);
    const dir = tmpDir('bfe-crash-group-');
    let model: Model = new Map();
    let acked = 0;
    let inFlight = 0;
    for (let round = 0; round < 10; round++) {
      const prefix = `c${round}`;
      // A seeded number of acknowledgements, then a seeded moment (load-independent).
      const kill = { acks: Math.floor(rand() * 48), ms: Math.floor(rand() * 40) };
      const outcome = await runWorker(
        { dir, prefix, seed: 700 + round, mode: 'write', writers: WRITERS },
        kill,
      );
      expect(outcome.acked.length).toBeGreaterThanOrEqual(kill.acks);
      acked += outcome.acked.length;
      inFlight += outcome.inFlight.length;
      model = await verify(dir, model, outcome, prefix);
    }
    // The kills landed among concurrent calls, after real work.
    expect(acked).toBeGreaterThan(0);
    expect(inFlight).toBeGreaterThan(10);
  }, 240_000);

  it.each(['wal-group-partial', 'wal-written', 'wal-group-synced'])(
    'recovers concurrent writers killed at %s',
    async (point) => {
      const dir = tmpDir('bfe-crash-group-fault-');
      // Acknowledged writes first, then the kill inside a later group.
      let model: Model = new Map();
      const first = await runWorker(
        { dir, prefix: 'a', seed: 800, mode: 'write', writers: WRITERS },
        150,
      );
      model = await verify(dir, model, first, `${point}-before`);
      const outcome = await runWorker(
        { dir, prefix: 'f', seed: 801, mode: 'write', writers: WRITERS },
        undefined,
        point,
      );
      expect(outcome.stderr).toContain(`fault: killed at ${point}`);
      expect(outcome.inFlight.length).toBeGreaterThan(1);
      await verify(dir, model, outcome, `fault-${point}`);
    },
    60_000,
  );
});
