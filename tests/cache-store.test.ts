import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import type { WorkerArgs, WorkerResult } from './fixtures/cache/worker.ts';
import { repoRoot, runBfe } from './helpers.ts';

const tmp = (): string => tmpDir('bfe-cache-e2e-');

interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface Worker {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves when the compute has started (the worker printed COMPUTING). */
  readonly computing: Promise<void>;
  /** Resolves when the store is open and the worker waits for its go file (printed READY). */
  readonly ready: Promise<void>;
  /** Resolves when the worker announced that it waits for another process's lock. */
  readonly waiting: Promise<void>;
  readonly done: Promise<Finished>;
}

/** Starts tests/fixtures/cache/worker.ts in its own Node process, as `pnpm bfe` runs the CLI. */
function startWorker(args: WorkerArgs): Worker {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@bfe/source',
      '--import',
      'tsx',
      join(repoRoot, 'tests/fixtures/cache/worker.ts'),
      JSON.stringify(args),
    ],
    { cwd: repoRoot },
  );
  let stdout = '';
  let stderr = '';
  /** Resolves once `text` has appeared on the stream; rejects if the worker ends first. */
  const seen = (stream: 'stdout' | 'stderr', text: string): Promise<void> => {
    const p = new Promise<void>((resolve, reject) => {
      child[stream].on('data', () => {
        if ((stream === 'stdout' ? stdout : stderr).includes(text)) resolve();
      });
      child.on('close', () => reject(new Error(`worker ended before ${text}:\n${stderr}`)));
    });
    p.catch(() => undefined); // awaited only by the tests that expect it
    return p;
  };
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const computing = seen('stdout', 'COMPUTING');
  const ready = seen('stdout', 'READY');
  const waiting = seen('stderr', '"kind":"wait"');
  const done = new Promise<Finished>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, computing, ready, waiting, done };
}

function resultOf(f: Finished): WorkerResult {
  const last = f.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as WorkerResult;
}

const computations = (log: string): number =>
  existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).length : 0;
const entries = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : []);

describe('artifact store across processes', () => {
  it('two processes racing on one key compute once and both get the same artifact', async () => {
    const dir = tmp();
    const root = join(dir, 'cache');
    const log = join(dir, 'computations.log');
    const release = join(dir, 'release');
    const first = startWorker({ root, log, releaseFile: release });
    await first.computing;
    // The second starts while the first holds the lock: it must wait, then find the artifact.
    // The first finishes only once the second has announced its wait (events, not timing).
    const second = startWorker({ root, log, releaseFile: release });
    await second.waiting;
    writeFileSync(release, '');
    const [a, b] = await Promise.all([first.done, second.done]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(computations(log)).toBe(1);
    const ra = resultOf(a);
    const rb = resultOf(b);
    expect(ra.cached).toBe(false);
    expect(rb.cached).toBe(true);
    expect(rb.key).toBe(ra.key);
    expect(rb.dir).toBe(ra.dir);
    expect(rb.content).toBe(ra.content);
    expect(ra.content).toBe(`computed by ${first.child.pid}`);
    expect(b.stderr).toContain('"kind":"wait"');
    expect(entries(join(root, 'tmp'))).toEqual([]);
    expect(entries(join(root, 'locks'))).toEqual([]);
  });

  it('SIGINT mid-compute exits 130 leaving no artifact and no lock; a rerun computes', async () => {
    const dir = tmp();
    const root = join(dir, 'cache');
    const log = join(dir, 'computations.log');
    const w = startWorker({ root, log, hang: true });
    await w.computing;
    expect(entries(join(root, 'tmp'))).toHaveLength(1);
    // The lock directory and the record of its holder (pid, host, stage).
    expect(entries(join(root, 'locks')).map((n) => n.slice(65))).toEqual(['lock', 'owner']);
    w.child.kill('SIGINT');
    const f = await w.done;
    expect(f.code, f.stderr).toBe(130);
    expect(entries(join(root, 'objects', 'toy'))).toEqual([]);
    expect(entries(join(root, 'tmp'))).toEqual([]);
    expect(entries(join(root, 'locks'))).toEqual([]);

    const again = await startWorker({ root, log }).done;
    expect(again.code, again.stderr).toBe(0);
    expect(resultOf(again).cached).toBe(false);
    expect(computations(log)).toBe(2);
    expect(again.stderr).not.toContain('"kind":"wait"');
  });

  it("without the store's handler, proper-lockfile still drops its lock on SIGINT; gc removes the temporary dir", async () => {
    const dir = tmp();
    const root = join(dir, 'cache');
    const log = join(dir, 'computations.log');
    const w = startWorker({ root, log, hang: true, exitOnSignal: false });
    await w.computing;
    w.child.kill('SIGINT');
    const f = await w.done;
    expect(f.signal).toBe('SIGINT');
    // The lock is gone; the record of its holder stays for gc.
    expect(entries(join(root, 'locks')).map((n) => n.slice(65))).toEqual(['owner']);
    expect(entries(join(root, 'tmp'))).toHaveLength(1);

    const gc = await runBfe(['cache', 'gc', '--cache-dir', root], {});
    expect(gc.code, gc.stderr).toBe(0);
    expect(gc.stdout).toMatch(/removed tmp .*left by an interrupted computation/);
    expect(entries(join(root, 'tmp'))).toEqual([]);
    expect(entries(join(root, 'locks'))).toEqual([]);
  });

  it('after SIGKILL the lock goes stale and the next process takes it over', async () => {
    const dir = tmp();
    const root = join(dir, 'cache');
    const log = join(dir, 'computations.log');
    const w = startWorker({ root, log, hang: true, staleMs: 4000 });
    await w.computing;
    // The next process is started and ready before the kill, so it asks for the key while the
    // dead holder's lock is still fresh (its start-up time on a busy machine does not count).
    const go = join(dir, 'go');
    const next = startWorker({ root, log, staleMs: 4000, goFile: go });
    await next.ready;
    w.child.kill('SIGKILL');
    await w.done;
    // Nothing ran to remove the lock, its holder record, the temporary dir or the lease.
    expect(entries(join(root, 'locks'))).toHaveLength(2);
    expect(entries(join(root, 'tmp'))).toHaveLength(1);
    expect(entries(join(root, 'leases'))).toHaveLength(1);

    writeFileSync(go, '');
    const again = await next.done;
    expect(again.code, again.stderr).toBe(0);
    expect(resultOf(again).cached).toBe(false);
    expect(computations(log)).toBe(2);
    // It waited for the dead holder's lock, naming it, then took it over.
    const wait = again.stderr.split('\n').find((l) => l.includes('"kind":"wait"'));
    expect(JSON.parse(wait ?? '{}')).toMatchObject({ pid: w.child.pid, alive: false });
    // The new holder of the key removed the dead process's temporary dir, and its lease went.
    expect(entries(join(root, 'tmp'))).toEqual([]);
    expect(entries(join(root, 'locks'))).toEqual([]);
    expect(entries(join(root, 'leases'))).toEqual([]);

    const gc = await runBfe(['cache', 'gc', '--cache-dir', root, '--json'], {});
    expect(gc.code, gc.stderr).toBe(0);
    expect((JSON.parse(gc.stdout) as { removed: unknown[] }).removed).toEqual([]);
    expect(entries(join(root, 'objects', 'toy'))).toHaveLength(1);
  });
});
