import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { MilvusRequestError, TokenCollection } from '@bfe/index-milvus';
import {
  milvusServerForTests,
  startMilvusServer,
  TEST_TIMINGS,
  type MilvusServer,
} from '@bfe/index-milvus/testing';
import { SparseScorer } from '@bfe/scorer';
import { milvusIndexFactory } from './milvus-index.js';
import { same, storeCases, text } from './milvus-index.cases.js';
import { searchView } from '../search/search.js';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';

const python = await milvusServerForTests();

describe.skipIf(python === undefined)(
  'MemoryStore with index: milvus (Milvus 2.3.5 server)',
  () => {
    const dataDir = suiteTmpDir('bfe-store-milvus-server-');
    const crashDir = suiteTmpDir('bfe-store-milvus-crash-');
    /** The stores' folders (a concurrent test cannot use tmpDir: a global onTestFinished). */
    const storesDir = suiteTmpDir('bfe-store-milvus-stores-');
    const storeDir = (): string => mkdtempSync(join(storesDir(), 'store-'));
    /** The store cases' server, and the crash case's own (it kills and restarts it). */
    let server: MilvusServer;
    let crashed: MilvusServer;
    const scorer = SparseScorer.open({ kernel: 'js' });
    const token = process.env.BFE_MILVUS_TOKEN;
    beforeAll(async () => {
      const starting = [dataDir(), crashDir()].map((dir) =>
        startMilvusServer({ dataDir: dir, python: python!, timings: TEST_TIMINGS }),
      );
      for (const s of starting) s.catch(() => undefined); // each is awaited below
      [server, crashed] = [await starting[0]!, await starting[1]!];
      // The `milvus://` URL case takes its token from the environment, as `bfe serve` does.
      process.env.BFE_MILVUS_TOKEN = server.token!;
    }, 300_000);
    afterAll(async () => {
      if (token === undefined) delete process.env.BFE_MILVUS_TOKEN;
      else process.env.BFE_MILVUS_TOKEN = token;
      await (await scorer).dispose();
      // The servers' data is thrown away: killed, not shut down gracefully (up to 10 s each).
      await server?.kill('SIGKILL');
      await crashed?.kill('SIGKILL');
    });

    // The two servers' cases run side by side: the crash case spends most of its time waiting
    // for its restarted server to hold its collection again. The store cases run one after
    // another (describe.sequential inside the concurrent group).
    describe.concurrent('on one server', () => {
      describe.sequential('the store cases', () => {
        storeCases(() => ({ address: server.address, token: server.token! }), scorer, storeDir);
      });
    });

    describe.concurrent('on a server of its own', () => {
      crashCase(() => crashed, scorer, storeDir);
    });
  },
);

/** The crash case: SIGKILL of `server()` mid-writes, a restart, and the store catching up. */
function crashCase(
  serverOf: () => MilvusServer,
  scorer: Promise<SparseScorer>,
  storeDir: () => string,
): void {
  it('SIGKILL and restart mid-writes: nothing acknowledged lost, searches fall back, Milvus catches up by write sequence', async () => {
    const server = serverOf();
    const embedder = fakeEmbedder();
    // fp32: the Milvus store and the exact one are compared bit for bit, flushed at other times.
    const scorerOption = { scorer: await scorer, embedder, codec: 'fp32' as const };
    const options = { address: server.address, token: server.token!, collection: 'crash' };
    const ref = await MemoryStore.open(storeDir(), scorerOption);
    const dir = storeDir();
    const index = milvusIndexFactory(options);
    const strict = milvusIndexFactory(options, { whenUnavailable: 'error' });
    let mil = await MemoryStore.open(dir, { index, ...scorerOption });
    const random = rng(21);
    const items = (from: number, to: number, bank: (i: number) => string) =>
      Array.from({ length: to - from }, (_, i) => ({
        id: `c${from + i}`,
        bank: bank(from + i),
        text: text(random),
      }));
    const both = async (fn: (s: MemoryStore) => Promise<unknown>): Promise<void> => {
      await fn(ref);
      await fn(mil);
    };
    const first = items(0, 30, (i) => (i % 3 === 0 ? 'bob' : 'alice'));
    await both((s) => s.add(first));
    await same(ref, mil);
    const synced = index.counts();
    expect(synced.fallbacks).toBe(0);

    await server.kill('SIGKILL');
    // Writes while Milvus is away are acknowledged by the store (its WAL), as always.
    const during = items(30, 45, () => 'alice');
    await both((s) => s.add(during));
    await both((s) => s.update([{ id: 'c1', bank: 'alice', text: 'cat river garden' }]));
    await both((s) => s.delete(['c2', 'c4'], { bank: 'alice' }));
    // alice changed (its sync fails), bob did not (its Milvus search fails): both are answered
    // exactly from the store's segments.
    await same(ref, mil);
    expect(index.counts().fallbacks).toBeGreaterThanOrEqual(2);
    expect(index.counts().syncs).toBe(synced.syncs);
    // Or, asked to, a search fails with one retryable error.
    const snap = mil.snapshot();
    const q = await embedder.encode(['cat river'], 'query');
    const view = snap.bank('alice');
    const error = await searchView(view, q, { k: 10, index: strict }, await scorer).catch(
      (e: unknown) => e,
    );
    await snap.release();
    expect(error).toBeInstanceOf(MilvusRequestError);
    expect(error).toMatchObject({ code: 'milvus-unavailable', retryable: true });

    await server.restart();
    // Once the client has reconnected (within its 2 s backoff) and the server holds the
    // collection again (tens of seconds after /healthz on a busy machine), a search syncs alice by
    // write sequence; bob's rows were never touched.
    const away = index.counts();
    await vi.waitFor(
      async () => {
        await mil.search({ bank: 'alice', query: 'cat' });
        expect(index.counts().syncs).toBeGreaterThan(away.syncs);
      },
      { timeout: 180_000, interval: 500 },
    );
    const back = index.counts();
    await same(ref, mil);
    expect(index.counts().fallbacks).toBe(back.fallbacks);

    // Nothing acknowledged is lost: a reopened store (a new factory, rows read back from
    // Milvus) ranks as the reference, and Milvus holds exactly the store's memories and tokens.
    await mil.close();
    await index.dispose();
    const again = milvusIndexFactory(options);
    mil = await MemoryStore.open(dir, { index: again, ...scorerOption });
    await same(ref, mil);
    expect(again.counts()).toMatchObject({ syncs: 0, rows: 0, fallbacks: 0 });
    const c = await TokenCollection.open(options, 8);
    for (const bank of ['alice', 'bob']) {
      const ids = [...(await c.memories(bank)).keys()].sort();
      expect(ids).toEqual(
        ref
          .list(bank)
          .items.map((m) => m.id)
          .sort(),
      );
    }
    expect(await c.count()).toBe((await mil.stats()).tokens);
    await c.close();
    await mil.close();
    await again.dispose();
    await strict.dispose();
    await ref.close();
  }, 300_000);
}
