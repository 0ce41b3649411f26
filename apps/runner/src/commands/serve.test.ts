import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const bin = fileURLToPath(new URL('../bin.ts', import.meta.url));

/** `bfe serve …` as a child process of the test, from source. */
function bfe(args: string[]) {
  return spawn(process.execPath, ['--conditions=@bfe/source', '--import', 'tsx', bin, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const exited = (child: ReturnType<typeof bfe>) =>
  new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

describe('bfe serve', () => {
  it('prints one listening line, serves the default model, exits 0 on SIGTERM', async () => {
    const dir = tmpDir();
    const child = bfe(['serve', '--store', dir, '--host', '127.0.0.1', '--port', '0']);
    const exit = exited(child);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines: string[] = [];
    const stdout = createInterface({ input: child.stdout });
    stdout.on('line', (line) => lines.push(line));
    const first = await new Promise<string>((resolve, reject) => {
      stdout.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
    });
    expect(first).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    expect(stderr).toMatch(/loopback requests only/);
    const url = first.slice('listening on '.length);

    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    const post = (path: string, payload: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    const added = await post('/v1/banks/alice/memories', {
      memories: [
        { id: 'm1', text: 'Alice adopted a grey cat called Miso in May.' },
        { id: 'm2', text: 'Alice runs a half marathon every autumn.' },
      ],
    });
    expect(added.status).toBe(200);
    const search = await post('/v1/banks/alice/search', { query: "What is the cat's name?", k: 2 });
    const { results } = (await search.json()) as {
      results: { id: string; evidence: { tokens: { queryPiece: string | null }[] } }[];
    };
    expect(results.map((r) => r.id)).toEqual(['m1', 'm2']);
    expect(results[0]!.evidence.tokens.map((t) => t.queryPiece)).toContain('cat');

    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(lines).toEqual([first]);
    expect(stderr).toMatch(/SIGTERM: finishing in-flight requests/);
  });

  it('exits 2 on a bad argument, with the usage', async () => {
    const child = bfe(['serve', '--port', '99999']);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await exited(child)).toBe(2);
    expect(stderr).toMatch(/--store DIR is required/);
    expect(stderr).toMatch(/usage: bfe serve/);
  });
});
