import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { openEmbedder, type EncodedTexts } from '@bfe/store';
import { installTinyQueryModels } from '@bfe/store/testing';
import { runServeCli } from './cli.js';
import { openServeEmbedder } from './serve-encoders.js';
import { liveServer, post } from './testing/live.js';

const bits = (e: EncodedTexts) => [
  Array.from(new Uint32Array(e.pooled.buffer, e.pooled.byteOffset, e.pooled.length)),
  Array.from(
    new Uint32Array(e.tokenVectors.buffer, e.tokenVectors.byteOffset, e.tokenVectors.length),
  ),
  Array.from(e.tokenIds),
];

let previous: string | undefined;
// The models are installed once for the file (tmpDir() is per test).
const root = mkdtempSync(join(tmpdir(), 'bfe-test-'));
beforeAll(async () => {
  previous = process.env.BFE_MODEL_DIR;
  process.env.BFE_MODEL_DIR = await installTinyQueryModels(root);
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  if (previous === undefined) delete process.env.BFE_MODEL_DIR;
  else process.env.BFE_MODEL_DIR = previous;
});

describe('serve with a query model (--query-model)', () => {
  it('encodes queries with the query graph and passages with the store model', async () => {
    const texts = ['the cat sat', 'hello world dogs'];
    const [store, query] = await Promise.all([
      openEmbedder({ model: 'tiny', threads: 1 }),
      openEmbedder({ model: 'tiny-q', threads: 1 }),
    ]);
    const both = await openServeEmbedder({ queryModel: 'tiny-q' }, { model: 'tiny' }, 1);
    try {
      expect(both).toBeDefined();
      // The store records the store model's graph, never the query graph's.
      expect(both!.model).toBe(store.model);
      expect(query.model).not.toBe(store.model);
      const q = bits(await both!.encode(texts, 'query'));
      expect(q).toEqual(bits(await query.encode(texts, 'query')));
      expect(q).not.toEqual(bits(await store.encode(texts, 'query')));
      const p = bits(await both!.encode(texts, 'passage'));
      expect(p).toEqual(bits(await store.encode(texts, 'passage')));
    } finally {
      await Promise.all([both?.dispose(), store.dispose(), query.dispose()]);
    }
  });

  it('adds and finds a memory over HTTP', async () => {
    const server = await liveServer({
      storeOptions: { model: 'tiny', threads: 1 },
      encodeWorkers: 1,
      queryModel: 'tiny-q',
    });
    try {
      const added = await post(server.port, '/v1/banks/b/memories', {
        memories: [{ id: 'm', text: 'the cat sat' }],
      });
      expect(added.status).toBe(200);
      const found = await post(server.port, '/v1/banks/b/search', { query: 'cat', k: 1 });
      expect(found.status).toBe(200);
      expect(found.json().results.map((r: { id: string }) => r.id)).toEqual(['m']);
    } finally {
      await server.close();
    }
  });

  it('refuses another model, or no workers of its own, with exit 2 before opening the store', async () => {
    const cases = [
      ['--query-model', 'tiny-other'],
      ['--query-model', 'no-such-model'],
      ['--query-model', 'tiny-q', '--encode-workers', '0'],
      ['--query-model', 'tiny-q', '--passage-workers', '0'],
    ];
    for (const extra of cases) {
      const store = tmpDir();
      const argv = ['--store', store, '--port', '0', '--model', 'tiny', ...extra];
      expect(await runServeCli(argv)).toBe(2);
      expect(readdirSync(store)).toEqual([]); // no store opened, no lock taken
    }
  });

  it('names the differing field when the models differ', async () => {
    const error = await openServeEmbedder({ queryModel: 'tiny-other' }, { model: 'tiny' }, 1).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(
      /tiny-other cannot encode queries for tiny's.*modelId/,
    );
  });
});
