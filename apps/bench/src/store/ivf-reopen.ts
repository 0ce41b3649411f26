/**
 * `pnpm bench:store-ivf`: a store's clustered index for one large bank (`large: 'ivf'`) at
 * deployment size — real MiniLM token states (LoCoMo's memories, then LongMemEval-S's, each
 * text once, replayed by text: `scale-pool.ts`; `pnpm bfe run` each benchmark's experiment
 * first) added to one bank up to `--tokens` — through its life: trained at the first search,
 * then searched (LongMemEval-S's encoded questions, replayed) beside the exact policy on the
 * same store (the peer, same run); after a reopen, read from its saved file and caught up,
 * against a reopen whose `ivf/` folder was removed (trained again, as a store without saved
 * indexes does). Each row: seconds from the open (or the first search) until the bank's
 * searches are served by the index, what the index did (trainings, loads), search p50 / p90.
 *
 *   pnpm bench:store-ivf --tokens 1000000 --queries 30 [--work <dir>] [--markdown]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { IVF_DIR, MemoryStore, storeIndexFactory, type Embedder } from '@bfe/store';
import { benchCommand, flag, parseCommand, positive, runScript } from '../shared/cli.js';
import { quantile } from '../shared/stats.js';
import { note, out, printTable } from '../shared/table.js';
import { loadPools, poolEmbedder } from './scale-pool.js';

interface Options {
  tokens: number;
  queries: number;
  work?: string;
  markdown?: boolean;
}

const command = benchCommand(
  'bench:store-ivf',
  "a large bank's IVF index: trained, saved, reopened",
)
  .addOption(flag('--tokens <n>', 'content tokens in the bank at least', positive, '1000000'))
  .addOption(flag('--queries <n>', 'searches per measurement', positive, '30'))
  .option('--work <dir>', 'where the store is written (default: the OS temporary folder)')
  .option('--markdown', 'tables as Markdown');
const { options } = parseCommand<Options>(command);

const BANK = 'big';
const ms = (t0: number): number => performance.now() - t0;
const load = (): string => loadavg()[0]!.toFixed(2);

async function main(): Promise<void> {
  const lme = Math.ceil(options.tokens / 20); // LongMemEval-S memories hold more than 20 tokens
  const { memories, queries } = await loadPools(lme);
  const embedder = poolEmbedder(memories, queries);
  // Each text once (a repeated text would tie its tokens at every query's k-th place).
  const rows: number[] = [];
  const seen = new Set<string>();
  const offsets = memories.encoded.tokenOffsets;
  let tokens = 0;
  for (let r = 0; r < memories.encoded.count && tokens < options.tokens; r++) {
    const text = memories.texts[r]!;
    if (seen.has(text) || Buffer.byteLength(text) > 65536) continue;
    seen.add(text);
    rows.push(r);
    tokens += offsets[r + 1]! - offsets[r]!;
  }
  const asked = Array.from({ length: options.queries }, (_, i) => {
    const r = queries.split + ((i * 7919) % (queries.encoded.count - queries.split));
    return queries.texts[r]!;
  });
  const dir = join(await mkdtemp(join(options.work ?? tmpdir(), 'bfe-bench-store-ivf-')), 'store');
  note(`${rows.length} memories, ${tokens} tokens (LoCoMo, then LongMemEval-S); store ${dir}`);
  const table: string[][] = [];
  try {
    const first = await openStore(dir, embedder, false);
    const t0 = performance.now();
    for (let i = 0; i < rows.length; i += 256) {
      const batch = rows.slice(i, i + 256);
      await first.store.add(
        batch.map((r) => ({ id: `m${r}`, bank: BANK, text: memories.texts[r]! })),
      );
    }
    await first.store.flush();
    note(`added in ${(ms(t0) / 1000).toFixed(1)} s`);
    table.push(await served('trained at the first search', first, asked));
    await first.store.close();
    const exact = await openStore(dir, embedder, true);
    table.push(await served('exact policy (the peer), reopened', exact, asked));
    await exact.store.close({ flush: false });
    const loaded = await openStore(dir, embedder, false);
    table.push(await served('reopened: saved index read, caught up', loaded, asked, true));
    await loaded.store.close({ flush: false });
    await rm(join(dir, IVF_DIR), { recursive: true, force: true });
    const again = await openStore(dir, embedder, false);
    table.push(await served('reopened without ivf/: trained again', again, asked, true));
    await again.store.close({ flush: false });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  out(
    `One bank of ${rows.length} memories, ${tokens} content tokens (sq8 store, fp32 index codes):`,
  );
  printTable(
    {
      head: [
        '',
        'until served s',
        'trained',
        'loaded',
        'search p50 / p90 ms',
        'IVF searches',
        'load',
      ],
      rows: table,
    },
    { markdown: options.markdown },
  );
}

type Opened = Awaited<ReturnType<typeof openStore>>;

async function openStore(dir: string, embedder: Embedder, exact: boolean) {
  const t0 = performance.now();
  const index = storeIndexFactory(exact ? { exact: true } : { large: 'ivf' });
  const store = await MemoryStore.open(dir, { embedder, index, compactSegments: 0 });
  return { store, index, exact, openedAt: t0 };
}

/**
 * The first search (exact, starting the index), the time until the index serves the bank (from
 * the open with `sinceOpen`, else from that search), then `asked` searched one at a time.
 */
async function served(
  label: string,
  { store, index, exact, openedAt }: Opened,
  asked: readonly string[],
  sinceOpen = false,
): Promise<string[]> {
  const t0 = sinceOpen ? openedAt : performance.now();
  await store.search({ bank: BANK, query: asked[0]!, k: 10 });
  await index.graphsSettled();
  const until = ms(t0) / 1000;
  const before = index.ivfStats().ivfSearches;
  const times: number[] = [];
  for (const query of asked) {
    const t = performance.now();
    await store.search({ bank: BANK, query, k: 10 });
    times.push(ms(t));
  }
  const stats = index.ivfStats();
  note(`${label}: ${until.toFixed(1)} s; ${JSON.stringify({ ...stats, banks: undefined })}`);
  const p = `${quantile(times, 0.5).toFixed(1)} / ${quantile(times, 0.9).toFixed(1)}`;
  return [
    label,
    exact ? '' : until.toFixed(1),
    exact ? '' : String(stats.builds),
    exact ? '' : String(stats.loads),
    p,
    `${stats.ivfSearches - before} of ${asked.length}`,
    load(),
  ];
}

await runScript('bench:store-ivf', main);
