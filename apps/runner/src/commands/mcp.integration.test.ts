import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const bin = fileURLToPath(new URL('../bin.ts', import.meta.url));
const node = ['--conditions=@bfe/source', '--import', 'tsx', bin];

/** The SDK's stdio client, spawning `bfe mcp …` from source (the default model, as `bfe serve`'s test). */
function stdioClient(args: string[]): { client: Client; transport: StdioClientTransport } {
  const env = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...node, 'mcp', ...args],
    cwd: repoRoot,
    env,
    stderr: 'pipe',
  });
  return { client: new Client({ name: 'bfe-test', version: '0.0.0' }), transport };
}

/** `bfe …` with no stdin; its exit code once its output is read whole ('close'). */
function run(args: string[]) {
  const child = spawn(process.execPath, [...node, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout: () => stdout, stderr: () => stderr };
}

const text = (r: CallToolResult): string =>
  r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;

describe('bfe mcp (stdio)', () => {
  it('add → search → get → delete round trip with the SDK client; a bad argument is a tool error', async () => {
    const dir = tmpDir();
    const { client, transport } = stdioClient(['--store', dir]);
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe('bfe-memory');
      const added = await call(client, 'memory_add', {
        bank: 'alice',
        memories: [
          { id: 'm1', text: 'Alice adopted a grey cat called Miso in May.' },
          { id: 'm2', text: 'Alice runs a half marathon every autumn.' },
        ],
      });
      expect(added.structuredContent).toEqual({ bank: 'alice', ids: ['m1', 'm2'] });

      const found = await call(client, 'memory_search', {
        bank: 'alice',
        query: "What is the cat's name?",
        k: 2,
      });
      expect(found.isError).toBeFalsy();
      const { results } = found.structuredContent as {
        results: { id: string; evidence: { tokens: { queryPiece: string | null }[] } }[];
      };
      expect(results.map((r) => r.id)).toEqual(['m1', 'm2']);
      expect(results[0]!.evidence.tokens.map((t) => t.queryPiece)).toContain('cat');
      expect(text(found)).toMatch(
        /^#1 m1 {2}score .*\n {2}Alice adopted a grey cat called Miso in May\.\n {2}evidence: .*cat→cat \d\.\d\d \d+%/m,
      );

      const got = await call(client, 'memory_get', { bank: 'alice', id: 'm1' });
      expect(got.structuredContent).toEqual({
        id: 'm1',
        bank: 'alice',
        text: 'Alice adopted a grey cat called Miso in May.',
      });

      const bad = await call(client, 'memory_add', { bank: 'no spaces allowed', memories: [] });
      expect(bad.isError).toBe(true);
      expect(text(bad)).toMatch(/Input validation error/);

      const deleted = await call(client, 'memory_delete', { bank: 'alice', ids: ['m1'] });
      expect(deleted.structuredContent).toEqual({ bank: 'alice', deleted: ['m1'], unknown: [] });
      const listed = await call(client, 'memory_list_banks', {});
      expect(listed.structuredContent).toEqual({ banks: [{ bank: 'alice', memories: 1 }] });
    } finally {
      await client.close();
    }
    // Closing stdin ends the server: it closes the store (and its lock) on its own.
    expect(stderr).toMatch(/stdin closed: closing the store/);
    expect(stderr).not.toMatch(/internal error/);
  });

  it('with --bank and --read-only offers the read tools without a bank argument; a second process on the store exits 2', async () => {
    const dir = tmpDir();
    const { client, transport } = stdioClient([
      ...['--store', dir, '--bank', 'alice', '--read-only', '--codec', 'fp16'],
      ...['--resident-product', 'int8'],
    ]);
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'memory_get',
        'memory_list_banks',
        'memory_search',
      ]);
      const search = tools.find((t) => t.name === 'memory_search')!;
      expect(Object.keys(search.inputSchema.properties ?? {})).not.toContain('bank');
      const named = await call(client, 'memory_get', { bank: 'bob', id: 'm1' });
      expect(named.isError).toBe(true);
      expect(text(named)).toMatch(/bank/);
      const empty = await call(client, 'memory_search', { query: 'cat' });
      expect(text(empty)).toBe("NOT_FOUND: no bank 'alice'");
      // A second process on the same store (an assistant beside `bfe serve`) is refused.
      const second = run(['mcp', '--store', dir]);
      expect(await second.code).toBe(2);
      expect(second.stderr()).toMatch(/is open for writing by process \d+/);
      expect(second.stdout()).toBe('');
    } finally {
      await client.close();
    }
    // The new store keeps the codec asked for (MANIFEST.json).
    const manifest = JSON.parse(readFileSync(join(dir, 'MANIFEST.json'), 'utf8')) as {
      codec?: string;
    };
    expect(manifest.codec).toBe('fp16');
  });

  it('exits 2 on a bad argument, with the usage on stderr and nothing on stdout', async () => {
    const child = run(['mcp', '--bank', 'x']);
    expect(await child.code).toBe(2);
    expect(child.stderr()).toMatch(/--store DIR is required/);
    expect(child.stderr()).toMatch(/usage: bfe mcp/);
    expect(child.stdout()).toBe('');
    const codec = run(['mcp', '--store', tmpDir(), '--codec', 'sq2']);
    expect(await codec.code).toBe(2);
    expect(codec.stderr()).toMatch(/--codec|codec/);
    const product = run(['mcp', '--store', tmpDir(), '--resident-product', 'fp16']);
    expect(await product.code).toBe(2);
    expect(product.stderr()).toMatch(/resident-product|residentProduct/);
  });
});
