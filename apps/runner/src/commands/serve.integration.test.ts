import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
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

/** The workspace's `bfe` executable, as `npx bfe` or a supervisor runs it: no pnpm in between. */
const executable = fileURLToPath(new URL('../../../../node_modules/.bin/bfe', import.meta.url));

/** Live processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === pid ? [Number(name)] : [];
      } catch {
        return [];
      }
    });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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

  it('answers --help with its options and exit 0, like every subcommand', async () => {
    const child = bfe(['serve', '--help']);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    expect(await exited(child)).toBe(0);
    expect(stdout).toMatch(/Usage: bfe serve/);
    expect(stdout).toMatch(/--store <dir>/);
  });

  it('runs as node_modules/.bin/bfe in its own session; SIGTERM to it leaves no process behind', async () => {
    const dir = tmpDir();
    const child = spawn(executable, ['serve', '--store', dir, '--port', '0'], {
      cwd: repoRoot,
      detached: true, // setsid: a supervisor's process group of its own
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exit = exited(child);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
    });
    expect(first).toMatch(/^listening on /);
    // The started process is node itself (the shell shim execs it), and its one child the server.
    expect(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).toMatch(/bfe\.mjs/);
    const servers = childrenOf(child.pid!);
    expect(servers).toHaveLength(1);
    process.kill(child.pid!, 'SIGTERM');
    expect(await exit).toBe(0);
    expect(alive(servers[0]!)).toBe(false);
    expect(stderr).toMatch(/SIGTERM: finishing in-flight requests/);
  });
});
