// Test helpers (imported by *.test.ts only; excluded from the build).
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore, type Embedder } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { buildServer } from '../app.js';
import type { AccessPolicy } from '../keys.js';
import { loopbackPolicy } from '../keys.js';

export interface Harness {
  readonly app: FastifyInstance;
  readonly store: MemoryStore;
  readonly dir: string;
  close(): Promise<void>;
}

/** A store on the fake embedder in a temporary directory, and the service over it. */
export async function harness(
  options: { access?: AccessPolicy; embedder?: Embedder; dir?: string } = {},
): Promise<Harness> {
  const dir = options.dir ?? tmpDir();
  const store = await MemoryStore.open(dir, { embedder: options.embedder ?? fakeEmbedder() });
  const app = await buildServer({ store, access: options.access ?? loopbackPolicy() });
  return {
    app,
    store,
    dir,
    async close() {
      await app.close();
      await store.close();
    },
  };
}

/** Everything a bad request must leave unchanged: totals and every bank's full listing. */
export async function storeState(store: MemoryStore): Promise<unknown> {
  const stats = await store.stats();
  const banks = store.banks().map((b) => [b, store.list(b, { limit: 1_000_000 })]);
  return { memories: stats.memories, tokens: stats.tokens, walBytes: stats.walBytes, banks };
}

/** The parsed JSON body of an injected response. */
export const body = (res: LightMyRequestResponse): any => JSON.parse(res.body); // eslint-disable-line @typescript-eslint/no-explicit-any
