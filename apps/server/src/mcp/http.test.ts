import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { liveServer, post, send } from '../testing/live.js';

// The MCP tools on `bfe serve`'s /mcp, reached by the SDK's own client over Streamable HTTP,
// behind the server's keys: Alice's key writes bank alice, the reader's reads it only.
const ALICE = 'alice-key-0123456789abcdef';
const READER = 'reader-key-0123456789abcdef';
const WRONG = 'wrong-key-0123456789abcdefg';

const root = suiteTmpDir('bfe-server-mcp-');
let server: Awaited<ReturnType<typeof liveServer>>;
beforeAll(async () => {
  server = await liveServer({
    dir: root(),
    keys: {
      [ALICE]: { banks: ['alice'], write: true },
      [READER]: { banks: ['alice', 'bob'], write: false },
    },
  });
});
afterAll(async () => {
  await server.close();
});

/** A connected SDK client presenting `key`. */
async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'bfe-test', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

const text = (r: CallToolResult): string =>
  r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;

describe('MCP over Streamable HTTP (/mcp)', () => {
  it('add → search → get → delete round trip with the SDK client, as the REST routes see it', async () => {
    const client = await connect(ALICE);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual([
        'memory_add',
        'memory_delete',
        'memory_get',
        'memory_list_banks',
        'memory_search',
      ]);
      // Alice's key sees one bank: calls may leave it out.
      const added = await call(client, 'memory_add', {
        memories: [
          { id: 'm1', text: 'alice adopted a grey cat called miso', meta: { source: 'chat' } },
          { id: 'm2', text: 'alice runs a half marathon every autumn' },
        ],
      });
      expect(added.isError).toBeFalsy();
      expect(added.structuredContent).toEqual({ bank: 'alice', ids: ['m1', 'm2'] });
      // The REST route reads what the tool wrote.
      const rest = await send(server.port, '/v1/banks/alice/memories/m1', {
        headers: { authorization: `Bearer ${ALICE}` },
      });
      expect(rest.json()).toEqual({
        id: 'm1',
        bank: 'alice',
        text: 'alice adopted a grey cat called miso',
        meta: { source: 'chat' },
      });

      const found = await call(client, 'memory_search', { query: 'grey cat', k: 2 });
      expect(found.isError).toBeFalsy();
      const structured = found.structuredContent as {
        results: { id: string; score: number; evidence: { tokens: { memoryPiece: string }[] } }[];
      };
      expect(structured.results.map((r) => r.id)).toEqual(['m1', 'm2']);
      // The same results as the REST search (the shared wire format), evidence included.
      const same = await post(
        server.port,
        '/v1/banks/alice/search',
        { query: 'grey cat', k: 2 },
        { authorization: `Bearer ${ALICE}` },
      );
      expect(structured.results).toEqual(same.json().results);
      expect(text(found)).toMatch(/^#1 m1 {2}score -?\d+\.\d{3} {2}pooled /m);
      expect(text(found)).toMatch(/evidence: grey→grey 1\.00 \d+% · cat→cat 1\.00 \d+%/);
      // minScore reaches the store: this encoder has no relevance calibration, so it is refused.
      const search = (await client.listTools()).tools.find((t) => t.name === 'memory_search')!;
      expect(Object.keys(search.inputSchema.properties ?? {})).toContain('minScore');
      const thresholded = await call(client, 'memory_search', { query: 'grey cat', minScore: 0.5 });
      expect(thresholded.isError).toBe(true);
      expect(text(thresholded)).toMatch(/no relevance calibration/);

      const got = await call(client, 'memory_get', { id: 'm2' });
      expect(got.structuredContent).toEqual({
        id: 'm2',
        bank: 'alice',
        text: 'alice runs a half marathon every autumn',
      });

      const deleted = await call(client, 'memory_delete', { ids: ['m2', 'nope'] });
      expect(deleted.structuredContent).toEqual({
        bank: 'alice',
        deleted: ['m2'],
        unknown: ['nope'],
      });
      const gone = await call(client, 'memory_get', { id: 'm2' });
      expect(gone.isError).toBe(true);
      expect(text(gone)).toBe("NOT_FOUND: no memory 'm2' in bank 'alice'");
      expect(server.store.list('alice').items.map((m) => m.id)).toEqual(['m1']);
    } finally {
      await client.close();
    }
  });

  it('refuses a wrong key and a missing one with 401 before any tool runs', async () => {
    const refused = connect(WRONG);
    await expect(refused).rejects.toMatchObject({ code: 401 });
    await expect(refused).rejects.toThrow(/UNAUTHORIZED.*unknown API key/);
    const bare = await post(server.port, '/mcp', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
    });
    expect(bare.status).toBe(401);
    expect(bare.json()).toEqual({
      error: { code: 'UNAUTHORIZED', message: 'missing Authorization: Bearer <key>' },
    });
  });

  it('answers a bad argument and a bank the key does not list with tool errors', async () => {
    const client = await connect(ALICE);
    try {
      const bad = await call(client, 'memory_search', { query: 'cat', k: 0 });
      expect(bad.isError).toBe(true);
      expect(text(bad)).toMatch(/Input validation error.*memory_search[\s\S]*k/);
      const unknownField = await call(client, 'memory_get', { id: 'm1', colour: 'red' });
      expect(unknownField.isError).toBe(true);
      expect(text(unknownField)).toMatch(/colour/);
      // Bob's bank is invisible to Alice's key: answered as a bank that does not exist.
      const other = await call(client, 'memory_search', { bank: 'bob', query: 'cat' });
      expect(other.isError).toBe(true);
      expect(text(other)).toBe("NOT_FOUND: no bank 'bob'");
      // The connection still works after tool errors.
      expect((await client.listTools()).tools.length).toBe(5);
    } finally {
      await client.close();
    }
  });

  it('offers a key without write the read tools only, and makes it name one of its banks', async () => {
    const client = await connect(READER);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(['memory_get', 'memory_list_banks', 'memory_search']);
      const unnamed = await call(client, 'memory_get', { id: 'm1' });
      expect(unnamed.isError).toBe(true);
      expect(text(unnamed)).toBe('BAD_REQUEST: name the bank: this key sees alice, bob');
      const listed = await call(client, 'memory_list_banks', {});
      expect(listed.structuredContent).toEqual({ banks: [{ bank: 'alice', memories: 1 }] });
    } finally {
      await client.close();
    }
  });
});

describe('/mcp and the service limits', () => {
  it('refuses a search answer over the response limit with a tool error, and a smaller one passes', async () => {
    const small = await liveServer({ sizes: { response: 4096 } });
    const client = new Client({ name: 'bfe-test', version: '0.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${small.url}/mcp`)));
      const words = 'grey cat sofa garden tea '.repeat(20);
      const memories = Array.from({ length: 8 }, (_, i) => ({
        id: `m${i}`,
        text: `${i} ${words}`,
      }));
      const added = await call(client, 'memory_add', { bank: 'b', memories });
      expect(added.isError).toBeFalsy();
      const big = await call(client, 'memory_search', { bank: 'b', query: 'grey cat', k: 8 });
      expect(big.isError).toBe(true);
      expect(text(big)).toMatch(
        /^RESPONSE_TOO_LARGE: the answer would be \d+ bytes, over the limit of 4096/,
      );
      const one = await call(client, 'memory_search', {
        bank: 'b',
        query: 'grey cat',
        k: 1,
        explain: false,
      });
      expect(one.isError).toBeFalsy();
    } finally {
      await client.close();
      await small.close();
    }
  });
});

describe('/mcp without a keys file', () => {
  it('answers loopback clients and refuses a foreign Host (DNS rebinding) as every route does', async () => {
    const open = await liveServer();
    try {
      const client = new Client({ name: 'bfe-test', version: '0.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${open.url}/mcp`)));
      const banks = (await client.callTool({
        name: 'memory_list_banks',
        arguments: {},
      })) as CallToolResult;
      expect(banks.structuredContent).toEqual({ banks: [] });
      await client.close();
      const rebound = await send(open.port, '/mcp', {
        method: 'POST',
        headers: { host: 'evil.example:80', 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(rebound.status).toBe(403);
      expect(rebound.json().error.code).toBe('HOST_NOT_ALLOWED');
      const get = await send(open.port, '/mcp');
      expect(get.status).toBe(405);
    } finally {
      await open.close();
    }
  });
});
