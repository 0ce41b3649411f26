// A writer process for the crash tests (src/crash.integration.test.ts), run from the transpiled
// sources (`node <jsTree>/packages/store/src/testing/crash-worker.js '<json args>'`, see
// crash-harness.ts). It writes until it is killed, printing one line per operation:
// `BEGIN <n> <json>` before call `n` and `ACK <n>` once it resolved (acknowledged: durable). With
// `writers` > 1, that many loops write at once, each to its own ids (group commit makes their
// calls share fsyncs). The parent kills it with SIGKILL and checks the store.
import { MemoryStore } from '../store.js';
import { storeIndexFactory } from '../index/store-index.js';
import { fakeEmbedder } from './fake-embedder.js';
import type { StoreCodec } from '../log/settings.js';
import { rng } from '@bfe/index/testing';

export interface WorkerArgs {
  readonly dir: string;
  readonly prefix: string;
  readonly seed: number;
  /** `write`: adds, updates and deletes forever; `compact`: build segments, then compact. */
  readonly mode: 'write' | 'compact';
  /** Keep HNSW graphs for banks over 40 tokens (searching now and then, so they get built). */
  readonly graph?: boolean;
  /** `write` mode: concurrent writer loops (default 1), each on its own ids. */
  readonly writers?: number;
  /** The codec of the store's segments (default: the store's default). */
  readonly codec?: StoreCodec;
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

interface Item {
  readonly bank: string;
  readonly id: string;
  version: number;
}

async function main(args: WorkerArgs): Promise<void> {
  const rand = rng(args.seed);
  const store = await MemoryStore.open(args.dir, {
    embedder: fakeEmbedder(),
    flushBytes: 16 * 1024,
    compactSegments: 3,
    bm25Language: CRASH_BM25_LANGUAGE,
    ...(args.graph === true ? { index: storeIndexFactory(CRASH_GRAPH_INDEX) } : {}),
    ...(args.codec === undefined ? {} : { codec: args.codec }),
  });
  const say = (line: string): boolean => process.stdout.write(`${line}\n`);
  let calls = 0;
  /** Runs one call between its `BEGIN` and `ACK` lines. */
  const call = async (op: string, items: readonly Item[], run: () => Promise<unknown>) => {
    const n = calls++;
    say(`BEGIN ${n} ${JSON.stringify({ op, items })}`);
    await run();
    say(`ACK ${n}`);
  };
  let n = 0;
  say('READY');
  const addBatch = async (prefix: string, mine: Item[]): Promise<void> => {
    const size = 1 + Math.floor(rand() * 8);
    const items = Array.from({ length: size }, () => {
      const id = `${prefix}-${n++}`;
      return { id, bank: BANKS[Math.floor(rand() * BANKS.length)]!, version: 0 };
    });
    await call('add', items, () =>
      store.add(items.map((m) => ({ id: m.id, bank: m.bank, text: textOf(m.id, 0) }))),
    );
    mine.push(...items);
  };
  // Each bank's BM25 postings are kept from then on: every later write updates them.
  const keepPostings = async (): Promise<void> => {
    const snap = store.snapshot();
    for (const bank of store.banks()) snap.bank(bank).lexicon?.forView(snap.bank(bank));
    await snap.release();
  };
  if (args.mode === 'compact') {
    const mine: Item[] = [];
    for (let i = 0; i < 6; i++) {
      await addBatch(args.prefix, mine);
      await keepPostings();
      await store.flush();
    }
    say('COMPACTING');
    await store.compact();
    say('COMPACTED');
  }
  const writer = async (prefix: string): Promise<never> => {
    const mine: Item[] = [];
    for (let op = 0; ; op++) {
      const banks = store.banks();
      if (op % 8 === 0) await keepPostings();
      if (args.graph === true && op % 4 === 0 && banks.length > 0)
        await store.search({ bank: banks[op % banks.length]!, query: textOf('q', op), k: 3 });
      const r = rand();
      if (r < 0.7 || mine.length < 4) await addBatch(prefix, mine);
      else if (r < 0.85) {
        const m = mine[Math.floor(rand() * mine.length)]!;
        const item = { ...m, version: m.version + 1 };
        await call('update', [item], () =>
          store.update([{ id: m.id, bank: m.bank, text: textOf(m.id, item.version) }]),
        );
        m.version = item.version;
      } else {
        const at = Math.floor(rand() * mine.length);
        const m = mine[at]!;
        await call('delete', [m], () => store.delete([m.id], { bank: m.bank }));
        mine.splice(at, 1);
      }
    }
  };
  const writers = args.writers ?? 1;
  await Promise.all(
    Array.from({ length: writers }, (_, w) =>
      writer(writers === 1 ? args.prefix : `${args.prefix}w${w}`),
    ),
  );
}

if (process.argv[2] !== undefined) {
  main(JSON.parse(process.argv[2]) as WorkerArgs).catch((error: unknown) => {
    process.stderr.write(`worker failed: ${String((error as Error).stack)}\n`);
    process.exit(1);
  });
}
