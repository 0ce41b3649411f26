/**
 * `pnpm bench:milvus-restart`: a store on the real Milvus 2.3.5 standalone server (PyPI
 * `milvus`, authorization on) while that server is SIGKILLed and restarted. One writer adds
 * `--batch` memories and then searches, in a loop, from `--before` seconds before the kill until
 * Milvus answers again: writes acknowledged (the store's WAL) and searches answered (exactly, from
 * the store's segments) while Milvus is away; seconds from the kill to the server healthy again
 * and to the first search answered by Milvus after the catch-up sync (by write sequence); the
 * rows Milvus holds against the store's tokens at the end. The memories are word lists of the
 * store's test embedder (the mechanics of the outage, not an encoder's speed).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenCollection } from '@bfe/index-milvus';
import { startMilvusServer } from '@bfe/index-milvus/testing';
import { SparseScorer } from '@bfe/scorer';
import { MemoryStore, milvusIndexFactory } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { benchCommand, flag, nonNegativeNumber, parseCommand, positive } from '../shared/cli.js';
import { note, printJson, printTable } from '../shared/table.js';
import { loadavg } from './scale.js';

const command = benchCommand(
  'bench:milvus-restart',
  'a store writing and searching through a SIGKILL and restart of the Milvus server',
)
  .addOption(flag('--memories <n>', 'memories before the kill', positive, '2000'))
  .addOption(flag('--batch <n>', 'memories per write', positive, '5'))
  .addOption(
    flag('--before <s>', 'seconds of writes and searches before the kill', nonNegativeNumber, '5'),
  );
const { options: o } = parseCommand<{ memories: number; batch: number; before: number }>(command);

const WORDS = 'cat dog hiking paris tuesday coffee music book river garden sister job'.split(' ');
let seed = 7;
const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const text = (): string =>
  Array.from(
    { length: 4 + Math.floor(random() * 12) },
    () => WORDS[Math.floor(random() * 12)]!,
  ).join(' ');

const work = mkdtempSync(join(tmpdir(), 'bfe-milvus-restart-'));
const server = await startMilvusServer({ dataDir: join(work, 'milvus') });
const scorer = await SparseScorer.open({ kernel: 'js' });
const options = { address: server.address, token: server.token!, collection: 'restart' };
const index = milvusIndexFactory(options);
const store = await MemoryStore.open(join(work, 'store'), {
  embedder: fakeEmbedder(32, 'fake-embedder', { jitter: 0.05 }),
  scorer,
  index,
});
let next = 0;
const add = async (n: number): Promise<void> => {
  const items = Array.from({ length: n }, () => ({ id: `m${next++}`, bank: 'b', text: text() }));
  await store.add(items);
};
const search = () => store.search({ bank: 'b', query: 'cat river music', k: 10 });
try {
  for (let i = 0; i < o.memories; i += 100) await add(Math.min(100, o.memories - i));
  await search(); // the first sync
  note(`synced ${o.memories} memories; ${JSON.stringify(index.counts())}`);
  interface Phase {
    writes: number;
    searches: number;
    fallbacks: number;
  }
  const loop = async (until: () => boolean, counts: Phase): Promise<void> => {
    while (!until()) {
      await add(o.batch);
      counts.writes++;
      const before = index.counts().fallbacks;
      await search();
      counts.searches++;
      if (index.counts().fallbacks > before) counts.fallbacks++;
    }
  };
  const warm: Phase = { writes: 0, searches: 0, fallbacks: 0 };
  const t0 = performance.now();
  await loop(() => performance.now() - t0 > o.before * 1000, warm);
  const killed = performance.now();
  await server.kill('SIGKILL');
  let healthyAt = Number.NaN;
  const back = server.restart().then(() => (healthyAt = performance.now()));
  const away = { writes: 0, searches: 0, fallbacks: 0 };
  await loop(() => !Number.isNaN(healthyAt), away);
  await back;
  // After the restart: until a search is answered by Milvus again (after a sync, no fallback).
  const after = { writes: 0, searches: 0, fallbacks: 0 };
  const syncs = index.counts().syncs;
  let caughtUpAt = Number.NaN;
  while (Number.isNaN(caughtUpAt)) {
    const fallbacks = index.counts().fallbacks;
    await add(o.batch);
    after.writes++;
    await search();
    after.searches++;
    const now = index.counts();
    if (now.fallbacks > fallbacks) after.fallbacks++;
    else if (now.syncs > syncs) caughtUpAt = performance.now();
  }
  const c = await TokenCollection.open(options, 32);
  const rows = await c.count();
  await c.close();
  const tokens = (await store.stats()).tokens;
  const result = {
    memoriesBefore: o.memories,
    batch: o.batch,
    beforeKill: warm,
    whileAway: away,
    afterRestart: after,
    secondsToHealthy: (healthyAt - killed) / 1000,
    secondsToCaughtUp: (caughtUpAt - killed) / 1000,
    secondsFromHealthyToCaughtUp: (caughtUpAt - healthyAt) / 1000,
    memoriesAtEnd: next,
    milvusRows: rows,
    storeTokens: tokens,
    counts: index.counts(),
    load: loadavg(),
  };
  printTable({
    head: ['phase', 'writes acked', 'searches answered', 'of them exact fallbacks', 'seconds'],
    align: ['left', 'right', 'right', 'right', 'right'],
    rows: [
      [
        'before the kill',
        String(warm.writes),
        String(warm.searches),
        String(warm.fallbacks),
        o.before.toFixed(1),
      ],
      [
        'kill → healthy',
        String(away.writes),
        String(away.searches),
        String(away.fallbacks),
        result.secondsToHealthy.toFixed(1),
      ],
      [
        'healthy → caught up',
        String(after.writes),
        String(after.searches),
        String(after.fallbacks),
        result.secondsFromHealthyToCaughtUp.toFixed(1),
      ],
    ],
  });
  note(`Milvus rows ${rows} = store tokens ${tokens}: ${rows === tokens}; load ${result.load}`);
  printJson(result);
} finally {
  await store.close();
  await index.dispose();
  await scorer.dispose();
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
