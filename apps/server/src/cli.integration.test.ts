import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { LOCK_FILE } from '@bfe/store';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const bin = fileURLToPath(new URL('./bin.ts', import.meta.url));

describe('bfe serve (the CLI, as a process)', () => {
  it('exits 0 on SIGTERM while a client is stalled half-way through a body', async () => {
    const store = tmpDir();
    const child = spawn(
      process.execPath,
      [
        ...['--conditions=@bfe/source', '--import', 'tsx', bin],
        ...['--store', store, '--host', '127.0.0.1', '--port', '0', '--drain-ms', '500'],
        ...['--encode-workers', '0', '--kernel-workers', '0'],
      ],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
      const port = Number(new URL(line.slice('listening on '.length)).port);
      const socket = connect(port, '127.0.0.1');
      let received = '';
      const closed = new Promise((resolve) => socket.on('close', resolve));
      // `Expect: 100-continue`: the server answers 100 once it has parsed the headers.
      const parsed = new Promise<void>((resolve) =>
        socket.on('data', (d: Buffer) => {
          received += d.toString();
          if (received.startsWith('HTTP/1.1 100')) resolve();
        }),
      );
      socket.write(
        'POST /v1/banks/alice/memories HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n' +
          'Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n',
      );
      await parsed;
      socket.write('{"memories": [{"id": "half", "te'); // and nothing more
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await closed;
      expect(received).toBe('HTTP/1.1 100 Continue\r\n\r\n');
      expect(stderr).toMatch(/SIGTERM: finishing in-flight requests/);
    } finally {
      child.kill('SIGKILL');
    }
    // The store was closed: its lock is released.
    expect(existsSync(join(store, LOCK_FILE))).toBe(false);
  }, 240_000);

  it('creates a store with --window and --codec, keeps them, and refuses another with exit 2', async () => {
    const store = tmpDir();
    const run = (extra: readonly string[], dir = store) => {
      const child = spawn(
        process.execPath,
        [
          ...['--conditions=@bfe/source', '--import', 'tsx', bin],
          ...['--store', dir, '--host', '127.0.0.1', '--port', '0'],
          ...['--encode-workers', '0', '--kernel-workers', '0', ...extra],
        ],
        { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const listening = new Promise<boolean>((resolve) => {
        createInterface({ input: child.stdout }).once('line', () => resolve(true));
        child.once('exit', () => resolve(false));
      });
      return { child, exited, listening, stderr: () => stderr };
    };
    const bad = run(['--window', '256']);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toMatch(/--window takes SIZE,STRIDE/);
    // A window the model cannot run, refused by an encoder worker: a config error too.
    const beyond = run(['--window', '1000,10', '--encode-workers', '1'], tmpDir());
    expect(await beyond.exited).toBe(2);
    expect(beyond.stderr()).toMatch(/window\.size 1000 is outside/);
    const first = run(['--window', '256,192', '--codec', 'sq8', '--cache-mb', '64']);
    try {
      expect(await first.listening).toBe(true);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    } finally {
      first.child.kill('SIGKILL');
    }
    const manifest = JSON.parse(readFileSync(join(store, 'MANIFEST.json'), 'utf8')) as {
      window?: unknown;
      codec?: unknown;
    };
    expect(manifest.window).toEqual({ size: 256, stride: 192 });
    expect(manifest.codec).toBe('sq8');
    const other = run(['--window', '128,96']);
    expect(await other.exited).toBe(2);
    expect(other.stderr()).toMatch(/in windows of 256 tokens, stride 192/);
    const otherCodec = run(['--codec', 'sq4']);
    expect(await otherCodec.exited).toBe(2);
    expect(otherCodec.stderr()).toMatch(/keeps token states as sq8/);
    expect(otherCodec.stderr()).toMatch(/bfe store compact .* --codec sq4/);
  }, 240_000);
});
