// A writer process for the crash tests (src/crash.integration.test.ts), run with
// `node --conditions=@bfe/source --import tsx crash-worker.ts '<json args>'`. It writes until it
// is killed, printing one line per operation: `BEGIN <json>` before the call and `ACK` once the
// call resolved (acknowledged: durable). The parent kills it with SIGKILL and checks the store.
import { MemoryStore } from '../store.js';
import { storeIndexFactory } from '../index/store-index.js';
import { fakeEmbedder } from './fake-embedder.js';
import { rng } from '@bfe/index/testing';

export interface WorkerArgs {
  readonly dir: string;
  readonly prefix: string;
  readonly seed: number;
  /** `write`: adds, updates and deletes forever; `compact`: build segments, then compact. */
  readonly mode: 'write' | 'compact';
  /** Keep HNSW graphs for banks over 40 tokens (searching now and then, so they get built). */
  readonly graph?: boolean;
}

/** BM25's language of the lexical index (the parent reopens with the same). */
export const CRASH_BM25_LANGUAGE = 'english';

/** The index options of the graph mode (the parent reopens with the same). */
export const CRASH_GRAPH_INDEX = { hnswMinTokens: 40, saveFraction: 0.1 } as const;

/** The text a memory gets at its `version`: the parent recomputes vectors from it. */
export function textOf(id: string, version: number): string {
  return `${id} v${version} ${id.length % 2 === 0 ? 'even' : 'odd'} words ${version % 3}`;
}

const BANKS = ['alpha', 'beta', 'gamma'];

async function main(args: WorkerArgs): Promise<void> {
  const rand = rng(args.seed);
  const store = await MemoryStore.open(args.dir, {
    embedder: fakeEmbedder(),
    flushBytes: 16 * 1024,
    compactSegments: 3,
    bm25Language: CRASH_BM25_LANGUAGE,
    ...(args.graph === true ? { index: storeIndexFactory(CRASH_GRAPH_INDEX) } : {}),
  });
  const say = (line: string): boolean => process.stdout.write(`${line}\n`);
  const mine: { bank: string; id: string; version: number }[] = [];
  let n = 0;
  say('READY');
  const addBatch = async (): Promise<void> => {
    const size = 1 + Math.floor(rand() * 8);
    const items = Array.from({ length: size }, () => {
      const id = `${args.prefix}-${n++}`;
      return { id, bank: BANKS[Math.floor(rand() * BANKS.length)]!, version: 0 };
    });
    say(`BEGIN ${JSON.stringify({ op: 'add', items })}`);
    await store.add(items.map((m) => ({ id: m.id, bank: m.bank, text: textOf(m.id, 0) })));
    say('ACK');
    mine.push(...items);
  };
  // Each bank's BM25 postings are kept from then on: every later write updates them.
  const keepPostings = async (): Promise<void> => {
    const snap = store.snapshot();
    for (const bank of store.banks()) snap.bank(bank).lexicon?.forView(snap.bank(bank));
    await snap.release();
  };
  if (args.mode === 'compact') {
    for (let i = 0; i < 6; i++) {
      await addBatch();
      await keepPostings();
      await store.flush();
    }
    say('COMPACTING');
    await store.compact();
    say('COMPACTED');
  }
  for (let op = 0; ; op++) {
    const banks = store.banks();
    if (op % 8 === 0) await keepPostings();
    if (args.graph === true && op % 4 === 0 && banks.length > 0)
      await store.search({ bank: banks[op % banks.length]!, query: textOf('q', op), k: 3 });
    const r = rand();
    if (r < 0.7 || mine.length < 4) await addBatch();
    else if (r < 0.85) {
      const m = mine[Math.floor(rand() * mine.length)]!;
      const item = { ...m, version: m.version + 1 };
      say(`BEGIN ${JSON.stringify({ op: 'update', items: [item] })}`);
      await store.update([{ id: m.id, bank: m.bank, text: textOf(m.id, item.version) }]);
      say('ACK');
      m.version = item.version;
    } else {
      const at = Math.floor(rand() * mine.length);
      const m = mine[at]!;
      say(`BEGIN ${JSON.stringify({ op: 'delete', items: [m] })}`);
      await store.delete([m.id], { bank: m.bank });
      say('ACK');
      mine.splice(at, 1);
    }
  }
}

if (process.argv[2] !== undefined) {
  main(JSON.parse(process.argv[2]) as WorkerArgs).catch((error: unknown) => {
    process.stderr.write(`worker failed: ${String((error as Error).stack)}\n`);
    process.exit(1);
  });
}
