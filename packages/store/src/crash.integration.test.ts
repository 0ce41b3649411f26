import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { StoreLockedError } from './lock.js';
import { readManifest, walGenerationOf } from './manifest.js';
import { MemoryStore } from './store.js';
import { rng } from '@bfe/index/testing';
import { textOf, type WorkerArgs } from './testing/crash-worker.js';
import { fakeEmbedder } from './testing/index.js';

// The crash test: a writer process is killed with SIGKILL at seeded random moments (and
// at failpoints inside flush and compaction); after each kill the store is reopened and must
// hold exactly the acknowledged writes (plus, at most, the one call in flight, whole), with
// bit-identical vectors, and accept new writes.

const worker = fileURLToPath(new URL('./testing/crash-worker.ts', import.meta.url));
const repo = fileURLToPath(new URL('../../../', import.meta.url));

interface Op {
  readonly op: 'add' | 'update' | 'delete';
  readonly items: readonly { bank: string; id: string; version: number }[];
}

interface Outcome {
  readonly acked: Op[];
  readonly inFlight: Op | undefined;
  readonly stderr: string;
}

/** Runs a worker; kills it `killAfterMs` after READY (or lets a failpoint kill it). */
function runWorker(
  args: WorkerArgs,
  killAfterMs: number | undefined,
  fault?: string,
  onReady?: (pid: number) => Promise<void>,
) {
  return new Promise<Outcome>((resolve, reject) => {
    const env = { ...process.env };
    if (fault !== undefined) env.BFE_STORE_FAULT_KILL = fault;
    const child = spawn(
      process.execPath,
      ['--conditions=@bfe/source', '--import', 'tsx', worker, JSON.stringify(args)],
      { cwd: repo, env },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      const ready = !stdout.includes('READY');
      stdout += d.toString();
      if (ready && stdout.includes('READY') && killAfterMs !== undefined)
        void (onReady?.(child.pid!) ?? Promise.resolve()).then(
          () => setTimeout(() => child.kill('SIGKILL'), killAfterMs),
          (error: unknown) => {
            child.kill('SIGKILL');
            reject(error as Error);
          },
        );
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      if (signal !== 'SIGKILL') return reject(new Error(`worker was not killed:\n${stderr}`));
      const acked: Op[] = [];
      let inFlight: Op | undefined;
      for (const line of stdout.split('\n')) {
        if (line.startsWith('BEGIN ')) inFlight = JSON.parse(line.slice(6)) as Op;
        else if (line === 'ACK') {
          acked.push(inFlight!);
          inFlight = undefined;
        }
      }
      resolve({ acked, inFlight, stderr });
    });
  });
}

/** The expected store: bank → id → text, in write order (a Map keeps insertion order). */
type Model = Map<string, Map<string, string>>;

function apply(model: Model, op: Op): Model {
  const next: Model = new Map([...model].map(([b, m]) => [b, new Map(m)]));
  for (const { bank, id, version } of op.items) {
    const m = next.get(bank) ?? new Map<string, string>();
    next.set(bank, m);
    m.delete(id); // an update moves the memory to the end of the write order
    if (op.op !== 'delete') m.set(id, textOf(id, version));
  }
  return next;
}

/** Whether the store holds exactly `model`: ids, texts, order, and the vectors of the texts. */
async function holds(store: MemoryStore, model: Model): Promise<boolean> {
  const embedder = fakeEmbedder();
  const snap = store.snapshot();
  try {
    const banks = new Set([...snap.banks(), ...model.keys()]);
    for (const bank of banks) {
      const view = snap.bank(bank);
      const want = model.get(bank) ?? new Map<string, string>();
      if (JSON.stringify(view.ids) !== JSON.stringify([...want.keys()])) return false;
      if (JSON.stringify(view.texts) !== JSON.stringify([...want.values()])) return false;
      const e = await embedder.encode([...want.values()], 'passage');
      const same = (a: ArrayLike<number>, b: ArrayLike<number>) =>
        a.length === b.length && Array.prototype.every.call(a, (v: number, i) => v === b[i]);
      if (!same(view.pooled, e.pooled) || !same(view.tokenVectors, e.tokenVectors)) return false;
      if (!same(view.tokenOffsets, e.tokenOffsets) || !same(view.tokenIds, e.tokenIds))
        return false;
      if (!same(view.tokenPositions, e.tokenPositions)) return false;
    }
    return true;
  } finally {
    await snap.release();
  }
}

/** Reopens after a kill, checks the store against the model, writes once more, closes. */
async function verify(dir: string, model: Model, outcome: Outcome, round: string): Promise<Model> {
  let expected = outcome.acked.reduce(apply, model);
  const store = await MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0 });
  try {
    if (!(await holds(store, expected))) {
      // The call in flight may have become durable before the kill: whole, never in part.
      expect(
        outcome.inFlight,
        `${round}: store differs from the acknowledged writes`,
      ).toBeDefined();
      expected = apply(expected, outcome.inFlight!);
      expect(await holds(store, expected), `${round}: store is neither state`).toBe(true);
    }
    // Nothing the manifest does not name survives the reopen.
    const manifest = (await readManifest(dir))!;
    const segments = readdirSync(`${dir}/segments`).map((f) => `segments/${f}`);
    expect(segments.sort()).toEqual(manifest.segments.map((s) => s.file).sort());
    const wals = readdirSync(dir).filter((f) => walGenerationOf(f) !== undefined);
    expect(wals.every((f) => walGenerationOf(f)! >= manifest.walGeneration)).toBe(true);
    // The store accepts new writes.
    const extra: Op = { op: 'add', items: [{ bank: 'alpha', id: `${round}-parent`, version: 0 }] };
    await store.add([{ id: `${round}-parent`, bank: 'alpha', text: textOf(`${round}-parent`, 0) }]);
    expected = apply(expected, extra);
    expect(await holds(store, expected)).toBe(true);
  } finally {
    await store.close({ flush: false });
  }
  return expected;
}

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
        const delay = Math.floor(rand() * 400);
        const outcome = await runWorker(
          { dir, prefix, seed: lane * 100 + round, mode: 'write' },
          delay,
        );
        acked += outcome.acked.length;
        model = await verify(dir, model, outcome, prefix);
      }
      return acked;
    });
    const acked = await Promise.all(lanes);
    // The kills landed after real work, not only before the first write.
    expect(acked.reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
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
    expect(await holds(store, model)).toBe(true);
    await store.close();
  });
});
