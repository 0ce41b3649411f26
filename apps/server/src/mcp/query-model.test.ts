import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { openEmbedder } from '@bfe/store';
import { installTinyQueryModels } from '@bfe/store/testing';

const bin = fileURLToPath(new URL('./bin.ts', import.meta.url));
const node = ['--conditions=@bfe/source', '--import', 'tsx', bin];

// The tiny models are installed once for the file (tmpDir() is per test).
const root = mkdtempSync(join(tmpdir(), 'bfe-test-'));
let models = '';
let previous: string | undefined;
beforeAll(async () => {
  models = await installTinyQueryModels(root);
  previous = process.env.BFE_MODEL_DIR;
  process.env.BFE_MODEL_DIR = models;
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  if (previous === undefined) delete process.env.BFE_MODEL_DIR;
  else process.env.BFE_MODEL_DIR = previous;
});

const env = (): Record<string, string> => ({
  ...Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
  ),
  BFE_MODEL_DIR: models,
});

/** `bfe mcp` (apps/server's mcp/bin from source) with the SDK's stdio client. */
async function connect(args: string[]): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...node, ...args],
    env: env(),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bfe-test', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

type Found = { results: { id: string; pooled: number }[] };

const search = async (client: Client, query: string): Promise<Found> => {
  const r = (await client.callTool({
    name: 'memory_search',
    arguments: { bank: 'alice', query, k: 2 },
  })) as CallToolResult;
  expect(r.isError).toBeFalsy();
  return r.structuredContent as Found;
};

const MEMORIES = [
  { id: 'm1', text: 'the cat sat on the mat' },
  { id: 'm2', text: 'hello world dogs' },
];
const QUERY = 'where did the cat sit';

describe('bfe mcp --query-model', () => {
  it("encodes the queries with the query graph and the memories with the store's model", async () => {
    const dir = tmpDir();
    const withQueryGraph = await connect([
      ...['--store', dir, '--model', 'tiny', '--query-model', 'tiny-q'],
    ]);
    let quantised: Found;
    try {
      const added = (await withQueryGraph.callTool({
        name: 'memory_add',
        arguments: { bank: 'alice', memories: MEMORIES },
      })) as CallToolResult;
      expect(added.isError).toBeFalsy();
      quantised = await search(withQueryGraph, QUERY);
    } finally {
      await withQueryGraph.close();
    }
    // The same store, its own model for the queries too.
    const plain = await connect(['--store', dir, '--model', 'tiny']);
    let own: Found;
    try {
      own = await search(plain, QUERY);
    } finally {
      await plain.close();
    }

    // Reference: the pooled cosines from the two graphs' encoders directly.
    const [tiny, tinyQ] = await Promise.all(
      ['tiny', 'tiny-q'].map((model) => openEmbedder({ model, threads: 1 })),
    );
    try {
      const passages = await tiny!.encode(
        MEMORIES.map((m) => m.text),
        'passage',
      );
      const cosines = async (queryEncoder: typeof tiny) => {
        const q = (await queryEncoder!.encode([QUERY], 'query')).pooled;
        const dim = q.length;
        return new Map(
          MEMORIES.map((m, i) => {
            let s = 0;
            for (let j = 0; j < dim; j++) s += q[j]! * passages.pooled[i * dim + j]!;
            return [m.id, s];
          }),
        );
      };
      const expectedQ = await cosines(tinyQ);
      const expectedOwn = await cosines(tiny);
      for (const r of quantised.results) expect(r.pooled).toBeCloseTo(expectedQ.get(r.id)!, 5);
      for (const r of own.results) expect(r.pooled).toBeCloseTo(expectedOwn.get(r.id)!, 5);
      expect(quantised.results.map((r) => r.pooled)).not.toEqual(own.results.map((r) => r.pooled));
    } finally {
      await Promise.all([tiny!.dispose(), tinyQ!.dispose()]);
    }
  });

  it('exits 2 when the query graph is not a graph of the store model', async () => {
    const child = spawn(
      process.execPath,
      [...node, '--store', tmpDir(), '--model', 'tiny', '--query-model', 'tiny-other'],
      { env: env(), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    // stdin closed at once: a server that started anyway would end (exit 0), not wait.
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/^bfe mcp: .*tiny/m);
    expect(stdout).toBe('');
  });
});
