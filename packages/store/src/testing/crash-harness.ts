// The crash tests' harness (src/crash.integration.test.ts, src/crash-group.integration.test.ts):
// runs a writer process (crash-worker.ts), kills it with SIGKILL, reopens the store and checks
// it holds exactly the acknowledged writes (plus, whole or not at all, each call in flight),
// with bit-identical vectors, and accepts new writes.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsTree } from '@bfe/core/testing';
import { expect } from 'vitest';
import { readManifest, walGenerationOf } from '../log/manifest.js';
import { MemoryStore } from '../store.js';
import { GRAPHS_DIR, graphMetaSchema } from '../index/graph/graph-files.js';
import { storeIndexFactory, type StoreIndexFactory } from '../index/store-index.js';
import { Bm25Index } from '@bfe/scorer';
import { CRASH_BM25_LANGUAGE, CRASH_GRAPH_INDEX, textOf, type WorkerArgs } from './crash-worker.js';
import { fakeEmbedder } from './fake-embedder.js';
import { DEFAULT_STORE_CODEC, type StoreCodec } from '../log/settings.js';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));
/**
 * The worker in the workspace's sources transpiled to JavaScript (`jsTree`): it starts without
 * tsx's loader hook, ≈ 0.5 s of CPU less for each of the crash tests' dozens of processes.
 */
const worker = (): string => join(jsTree(repo), 'packages/store/src/testing/crash-worker.js');

export interface Op {
  readonly op: 'add' | 'update' | 'delete';
  readonly items: readonly { bank: string; id: string; version: number }[];
}

export interface Outcome {
  /** Acknowledged calls, in the order their acknowledgements were printed. */
  readonly acked: Op[];
  /** Calls begun and not acknowledged (one per writer loop at most). */
  readonly inFlight: Op[];
  readonly stderr: string;
}

/** Runs a worker; kills it `killAfterMs` after READY (or lets a failpoint kill it). */
/**
 * When to SIGKILL the worker: `ms` after its READY line, or — load-independent — `ms` after its
 * `acks`-th acknowledgement (0: after READY), so a busy machine cannot make a kill land before
 * any work; `undefined`: never (a failpoint kills it).
 */
export type KillAfter = number | { readonly acks: number; readonly ms: number } | undefined;

export function runWorker(
  args: WorkerArgs,
  killAfter: KillAfter,
  fault?: string,
  onReady?: (pid: number) => Promise<void>,
) {
  return new Promise<Outcome>((resolve, reject) => {
    const env = { ...process.env };
    if (fault !== undefined) env.BFE_STORE_FAULT_KILL = fault;
    const child = spawn(process.execPath, [worker(), JSON.stringify(args)], { cwd: repo, env });
    let stdout = '';
    let stderr = '';
    let armed = false;
    const acks = typeof killAfter === 'object' ? killAfter.acks : 0;
    const ms = typeof killAfter === 'object' ? killAfter.ms : killAfter;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (armed || ms === undefined || !stdout.includes('READY')) return;
      if (acks > 0 && (stdout.match(/^ACK /gm)?.length ?? 0) < acks) return;
      armed = true;
      void (onReady?.(child.pid!) ?? Promise.resolve()).then(
        () => setTimeout(() => child.kill('SIGKILL'), ms),
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
      const inFlight = new Map<string, Op>();
      for (const line of stdout.split('\n')) {
        const [word, n] = line.split(' ', 2);
        if (word === 'BEGIN') inFlight.set(n!, JSON.parse(line.slice(`BEGIN ${n} `.length)) as Op);
        else if (word === 'ACK' && inFlight.has(n!)) {
          acked.push(inFlight.get(n!)!);
          inFlight.delete(n!);
        }
      }
      resolve({ acked, inFlight: [...inFlight.values()], stderr });
    });
  });
}

/** The expected store: bank → id → text, in write order (a Map keeps insertion order). */
export type Model = Map<string, Map<string, string>>;

export function apply(model: Model, op: Op): Model {
  const next: Model = new Map([...model].map(([b, m]) => [b, new Map(m)]));
  for (const { bank, id, version } of op.items) {
    const m = next.get(bank) ?? new Map<string, string>();
    next.set(bank, m);
    m.delete(id); // an update moves the memory to the end of the write order
    if (op.op !== 'delete') m.set(id, textOf(id, version));
  }
  return next;
}

/**
 * Largest difference a token state may show after a round trip through the store's codec: sq8
 * keeps each dimension within half of one of 255 steps of its range (at most 2, the states
 * being unit vectors); fp32 keeps it exactly.
 */
export const CODEC_TOLERANCE: Readonly<Record<StoreCodec, number>> = {
  fp32: 0,
  fp16: 1e-3,
  sq8: 1 / 255 + 1e-6,
  sq4: 1 / 15 + 1e-6,
};

/**
 * Whether the store holds exactly `model`: ids, texts, order (unless `ordered` is false: calls
 * of concurrent writers are in commit order, which they do not know), and the vectors of the
 * texts (token states within `tolerance` of them: a codec's round trip).
 */
export async function holds(
  store: MemoryStore,
  model: Model,
  ordered = true,
  tolerance = 0,
): Promise<boolean> {
  const embedder = fakeEmbedder();
  const snap = store.snapshot();
  try {
    const banks = new Set([...snap.banks(), ...model.keys()]);
    for (const bank of banks) {
      const view = snap.bank(bank);
      const known = model.get(bank) ?? new Map<string, string>();
      const want = ordered ? known : inOrder(known, view.ids);
      if (want === undefined) return false;
      if (JSON.stringify(view.ids) !== JSON.stringify([...want.keys()])) return false;
      if (JSON.stringify(view.texts) !== JSON.stringify([...want.values()])) return false;
      const e = await embedder.encode([...want.values()], 'passage');
      const same = (a: ArrayLike<number>, b: ArrayLike<number>) =>
        a.length === b.length && Array.prototype.every.call(a, (v: number, i) => v === b[i]);
      const near = (a: ArrayLike<number>, b: ArrayLike<number>) =>
        a.length === b.length &&
        Array.prototype.every.call(a, (v: number, i) => Math.abs(v - b[i]!) <= tolerance);
      if (!same(view.pooled, e.pooled) || !near(view.tokenVectors, e.tokenVectors)) return false;
      if (!same(view.tokenOffsets, e.tokenOffsets) || !same(view.tokenIds, e.tokenIds))
        return false;
      if (!same(view.tokenPositions, e.tokenPositions)) return false;
    }
    return true;
  } finally {
    await snap.release();
  }
}

/** `memories` in the order of `ids`, when they are the same ids. */
function inOrder(
  memories: ReadonlyMap<string, string>,
  ids: readonly string[],
): Map<string, string> | undefined {
  if (ids.length !== memories.size || ids.some((id) => !memories.has(id))) return undefined;
  return new Map(ids.map((id) => [id, memories.get(id)!]));
}

/** The store's state of `op`'s items: `after` (the call is whole), `before` (absent), or neither. */
function stateOf(store: MemoryStore, model: Model, op: Op): 'after' | 'before' | 'partial' {
  const after = op.items.every(({ bank, id, version }) =>
    op.op === 'delete'
      ? store.get(bank, id) === undefined
      : store.get(bank, id)?.text === textOf(id, version),
  );
  const before = op.items.every(
    ({ bank, id }) => store.get(bank, id)?.text === model.get(bank)?.get(id),
  );
  return after ? 'after' : before ? 'before' : 'partial';
}

/** `model` in the store's write order (the store holds exactly its memories). */
function storeOrder(store: MemoryStore, model: Model): Model {
  return new Map(
    [...model].map(([bank, m]) => [
      bank,
      m.size === 0
        ? m
        : new Map(store.list(bank, { limit: m.size }).items.map((x) => [x.id, m.get(x.id)!])),
    ]),
  );
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
    expect(g).toMatchObject({
      versions: view.ids.length,
      tokens: view.tokenOffsets[view.ids.length],
    });
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

/**
 * Reopens after a kill, checks the store against the model, writes once more, closes; returns
 * the model now, in the store's write order.
 */
export async function verify(
  dir: string,
  model: Model,
  outcome: Outcome,
  round: string,
  graph = false,
  codec: StoreCodec = DEFAULT_STORE_CODEC,
): Promise<Model> {
  const tolerance = CODEC_TOLERANCE[codec];
  let expected = outcome.acked.reduce(apply, model);
  const index = graph ? storeIndexFactory(CRASH_GRAPH_INDEX) : undefined;
  const store = await MemoryStore.open(dir, {
    embedder: fakeEmbedder(),
    compactSegments: 0,
    bm25Language: CRASH_BM25_LANGUAGE,
    ...(index === undefined ? {} : { index }),
  });
  try {
    // Each call in flight may have become durable before the kill: whole, never in part.
    const ordered = outcome.inFlight.length <= 1;
    for (const op of outcome.inFlight) {
      const state = stateOf(store, expected, op);
      expect(state, `${round}: a call in flight is half-visible: ${JSON.stringify(op)}`).not.toBe(
        'partial',
      );
      if (state === 'after') expected = apply(expected, op);
    }
    expect(store.settings.codec, `${round}: the store's codec`).toBe(codec);
    expect(await holds(store, expected, ordered, tolerance), `${round}: store differs`).toBe(true);
    expected = storeOrder(store, expected);
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
    expect(await holds(store, expected, true, tolerance)).toBe(true);
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
export const openings: string[] = [];
