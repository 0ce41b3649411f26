import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { LOCK_FILE, StoreLockedError, formatLock, parseLock } from './log/lock.js';
import { readManifest, walGenerationOf } from './log/manifest.js';
import { MemoryStore } from './store.js';
import { rng } from '@bfe/index/testing';
import { GRAPHS_DIR, graphMetaSchema } from './index/graph/graph-files.js';
import { storeIndexFactory, type StoreIndexFactory } from './index/store-index.js';
import { Bm25Index } from '@bfe/scorer';
import {
  CRASH_BM25_LANGUAGE,
  CRASH_GRAPH_INDEX,
  textOf,
  type WorkerArgs,
} from './testing/crash-worker.js';
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

/**
 * The graphs after a reopen: each holds exactly its bank's live versions, and `graphs/` holds
 * only files a meta names. Returns how each graph was opened.
 */
async function checkGraphs(store: MemoryStore, index: StoreIndexFactory, dir: string) {
  for (const bank of store.banks()) await store.search({ bank, query: 'v0 words', k: 3 });
  await index.graphsSettled();
  const stats = index.graphStats();
  expect(stats.failures).toEqual([]);
  const snap = store.snapshot();
  for (const [bank, g] of Object.entries(stats.banks)) {
    const view = snap.bank(bank);
    expect(g).toEqual({ versions: view.ids.length, tokens: view.tokenOffsets[view.ids.length] });
  }
  await snap.release();
  const files = existsSync(`${dir}/${GRAPHS_DIR}`) ? readdirSync(`${dir}/${GRAPHS_DIR}`) : [];
  const named = files
    .filter((f) => f.endsWith('.json'))
    .map(
      (f) =>
        graphMetaSchema.parse(JSON.parse(readFileSync(`${dir}/${GRAPHS_DIR}/${f}`, 'utf8'))).file,
    );
  expect(files.filter((f) => f.endsWith('.usearch')).sort()).toEqual(named.sort());
  return Object.values(stats.opened);
}

/**
 * The lexical index after a reopen (and after writes on top): each bank's kept BM25 postings —
 * derived from the recovered memories, then kept through writes — hold exactly the model's
 * memories and score as the experiment's `Bm25Index` over their texts, bit for bit.
 */
async function checkLexicon(store: MemoryStore, model: Model, round: string): Promise<void> {
  const snap = store.snapshot();
  try {
    for (const [bank, memories] of model) {
      if (memories.size === 0) continue;
      const view = snap.bank(bank);
      const { fromView } = store.lexicalStats();
      const lex = view.lexicon!.forView(view);
      expect(store.lexicalStats().fromView, `${round}: ${bank}: the kept postings`).toBe(fromView);
      expect(lex.documents).toBe(memories.size);
      const index = Bm25Index.build([...memories.values()], { language: CRASH_BM25_LANGUAGE });
      const ids = [...memories.keys()];
      for (const query of ['v0 words', 'even v1 odd v2', `${ids[0]} ${ids.at(-1)} 2`]) {
        const got = lex.scores(lex.queryTerms(query), ids);
        const want = index.score(query);
        const same = Array.from(got, (x, i) => Object.is(x, want[i]));
        expect(same, `${round}: ${bank} '${query}'`).not.toContain(false);
      }
    }
  } finally {
    await snap.release();
  }
}

/** Reopens after a kill, checks the store against the model, writes once more, closes. */
async function verify(
  dir: string,
  model: Model,
  outcome: Outcome,
  round: string,
  graph = false,
): Promise<Model> {
  let expected = outcome.acked.reduce(apply, model);
  const index = graph ? storeIndexFactory(CRASH_GRAPH_INDEX) : undefined;
  const store = await MemoryStore.open(dir, {
    embedder: fakeEmbedder(),
    compactSegments: 0,
    bm25Language: CRASH_BM25_LANGUAGE,
    ...(index === undefined ? {} : { index }),
  });
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
    await checkLexicon(store, expected, round);
    const { built } = store.lexicalStats();
    const alphaKept = (expected.get('alpha')?.size ?? 0) > 0;
    // The store accepts new writes.
    const extra: Op = { op: 'add', items: [{ bank: 'alpha', id: `${round}-parent`, version: 0 }] };
    await store.add([{ id: `${round}-parent`, bank: 'alpha', text: textOf(`${round}-parent`, 0) }]);
    expected = apply(expected, extra);
    expect(await holds(store, expected)).toBe(true);
    // The kept postings took the add: none derived again (alpha's, unless it had none).
    await checkLexicon(store, expected, `${round}+1`);
    expect(store.lexicalStats().built).toBe(built + (alphaKept ? 0 : 1));
    if (index !== undefined) openings.push(...(await checkGraphs(store, index, dir)));
  } finally {
    await store.close({ flush: false });
  }
  return expected;
}

/** How graphs were opened across the graph rounds (loaded or rebuilt, and why). */
const openings: string[] = [];

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
    expect(await holds(store, model)).toBe(true);
    await store.close();
  });

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
    for (const point of ['graph-file', 'graph-meta']) {
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
