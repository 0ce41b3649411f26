import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lock } from 'proper-lockfile';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ordinaryUserPrefix, tmpDir } from '@bfe/core/testing';
import { ArtifactCorruptError, bytesSha256 } from '@bfe/core';
import { CacheUnwritableError } from './errors.js';
import { artifactKey, type ArtifactSpec } from './key.js';
import { ArtifactStore } from './store.js';
import type { CacheEvent, ComputeFn } from './types.js';

let root: string;
beforeEach(() => {
  root = tmpDir('bfe-cache-');
});
// A test may leave the root unwritable; restored before tmpDir removes it (after afterEach).
afterEach(() => chmodSync(root, 0o700));

const spec: ArtifactSpec = {
  stage: 'encode',
  version: '1',
  config: { dtype: 'float32', batch: 32 },
  inputs: { data: 'd'.repeat(64) },
};

/** A compute that writes two files (one in a sub-folder) and counts its calls. */
function counting(): { calls: () => number; compute: ComputeFn } {
  let n = 0;
  return {
    calls: () => n,
    compute: async (dir) => {
      n += 1;
      await writeFile(join(dir, 'vectors.bin'), Buffer.alloc(1000, 7));
      mkdirSync(join(dir, 'parts'));
      await writeFile(join(dir, 'parts', 'ids.json'), JSON.stringify(['m1', 'm2']));
      return { rows: 2 };
    },
  };
}

function events(): { list: CacheEvent[]; onEvent: (e: CacheEvent) => void } {
  const list: CacheEvent[] = [];
  return { list, onEvent: (e) => list.push(e) };
}

const entries = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : []);

describe('ArtifactStore.getOrCreate', () => {
  it('computes on a miss, then returns the same artifact from the cache', async () => {
    const store = await ArtifactStore.open({ root });
    const c = counting();
    const first = await store.getOrCreate(spec, c.compute);
    expect(first.cached).toBe(false);
    expect(first.key).toBe(artifactKey(spec));
    expect(first.dir).toBe(join(root, 'objects', 'encode', first.key));
    expect(first.manifest).toMatchObject({
      schemaVersion: 1,
      stage: 'encode',
      key: first.key,
      codeVersion: '1',
      config: spec.config,
      inputs: spec.inputs,
      meta: { rows: 2 },
    });
    expect(first.manifest.files).toEqual([
      { path: 'parts/ids.json', bytes: 11, sha256: bytesSha256(Buffer.from('["m1","m2"]')) },
      { path: 'vectors.bin', bytes: 1000, sha256: bytesSha256(Buffer.alloc(1000, 7)) },
    ]);
    const onDisk = JSON.parse(readFileSync(join(first.dir, 'artifact.json'), 'utf8')) as unknown;
    expect(onDisk).toEqual(first.manifest);

    const second = await store.getOrCreate(spec, c.compute);
    expect(second).toMatchObject({ cached: true, key: first.key, dir: first.dir });
    expect(second.manifest).toEqual(first.manifest);
    expect(c.calls()).toBe(1);
    expect(entries(join(root, 'tmp'))).toEqual([]);
    expect(entries(join(root, 'locks'))).toEqual([]);
  });

  it('computes again when the config, the version or an input changes', async () => {
    const store = await ArtifactStore.open({ root });
    const c = counting();
    const keys = new Set<string>();
    for (const s of [
      spec,
      { ...spec, config: { dtype: 'float16', batch: 32 } },
      { ...spec, version: '2' },
      { ...spec, inputs: { data: 'e'.repeat(64) } },
    ]) {
      const r = await store.getOrCreate(s, c.compute);
      expect(r.cached).toBe(false);
      keys.add(r.key);
    }
    expect(keys.size).toBe(4);
    expect(c.calls()).toBe(4);
    expect(await store.getOrCreate({ ...spec, version: '2' }, c.compute)).toMatchObject({
      cached: true,
    });
  });

  it('leaves nothing visible when the compute throws halfway, and computes on the next call', async () => {
    const store = await ArtifactStore.open({ root });
    const boom = new Error('encoder crashed');
    await expect(
      store.getOrCreate(spec, async (dir) => {
        await writeFile(join(dir, 'vectors.bin'), Buffer.alloc(500));
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(existsSync(store.artifactDir('encode', artifactKey(spec)))).toBe(false);
    expect(entries(join(root, 'tmp'))).toEqual([]);
    expect(entries(join(root, 'locks'))).toEqual([]);
    const c = counting();
    expect((await store.getOrCreate(spec, c.compute)).cached).toBe(false);
    expect(c.calls()).toBe(1);
  });

  it('refuses a compute that writes artifact.json, a symbolic link or non-JSON metadata', async () => {
    const store = await ArtifactStore.open({ root });
    await expect(
      store.getOrCreate(spec, async (dir) => writeFileSync(join(dir, 'artifact.json'), '{}')),
    ).rejects.toThrow(/store owns/);
    await expect(
      store.getOrCreate(spec, async (dir) => symlinkSync('/etc/hostname', join(dir, 'link'))),
    ).rejects.toThrow(/only regular files/);
    await expect(
      store.getOrCreate(spec, async () => ({ when: new Date() }) as never),
    ).rejects.toThrow(/not a JSON object/);
    expect(entries(join(root, 'objects', 'encode'))).toEqual([]);
    expect(entries(join(root, 'tmp'))).toEqual([]);
  });

  it('computes once for two concurrent calls in one process; the second reports cached', async () => {
    const store = await ArtifactStore.open({ root });
    const other = await ArtifactStore.open({ root });
    let calls = 0;
    const slow: ComputeFn = async (dir) => {
      calls += 1;
      await new Promise((r) => setTimeout(r, 100));
      await writeFile(join(dir, 'out.txt'), 'done');
    };
    const [a, b, c] = await Promise.all([
      store.getOrCreate(spec, slow),
      store.getOrCreate(spec, slow),
      other.getOrCreate(spec, slow),
    ]);
    expect(calls).toBe(1);
    expect([a.cached, b.cached, c.cached].sort()).toEqual([false, true, true]);
    expect(new Set([a.dir, b.dir, c.dir]).size).toBe(1);
  });

  it('waits while another holder has the key locked, then computes', async () => {
    const ev = events();
    const store = await ArtifactStore.open({ root, onEvent: ev.onEvent });
    const release = await lock(join(root, 'locks', artifactKey(spec)), { realpath: false });
    const c = counting();
    const pending = store.getOrCreate(spec, c.compute);
    // vi.waitFor gives up after 1 s by default: too short on a loaded machine.
    await vi.waitFor(() => expect(ev.list.map((e) => e.kind)).toContain('wait'), {
      timeout: 30_000,
    });
    expect(c.calls()).toBe(0);
    await release();
    expect((await pending).cached).toBe(false);
    expect(c.calls()).toBe(1);
  });

  it('takes over a stale lock left by a dead process', async () => {
    const store = await ArtifactStore.open({ root, staleMs: 2000 });
    const lockDir = join(root, 'locks', `${artifactKey(spec)}.lock`);
    mkdirSync(lockDir);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockDir, old, old);
    const c = counting();
    expect((await store.getOrCreate(spec, c.compute)).cached).toBe(false);
    expect(existsSync(lockDir)).toBe(false);
  });
});

describe('ArtifactStore: corrupt artifacts', () => {
  async function stored(options: Parameters<typeof ArtifactStore.open>[0] = {}) {
    const ev = events();
    const store = await ArtifactStore.open({ root, onEvent: ev.onEvent, ...options });
    const c = counting();
    const r = await store.getOrCreate(spec, c.compute);
    return { store, c, r, ev };
  }

  it('quarantines a truncated artifact on read, warns, and computes it again', async () => {
    const { store, c, r, ev } = await stored();
    truncateSync(join(r.dir, 'vectors.bin'), 10);
    const again = await store.getOrCreate(spec, c.compute);
    expect(again.cached).toBe(false);
    expect(c.calls()).toBe(2);
    const warning = ev.list.find((e) => e.kind === 'warning');
    expect(warning?.kind === 'warning' && warning.message).toContain('vectors.bin has 10 bytes');
    expect(entries(join(root, 'quarantine'))).toHaveLength(1);
    expect(statSync(join(again.dir, 'vectors.bin')).size).toBe(1000);
  });

  it('treats a missing file or manifest as corrupt', async () => {
    const { store, c, r } = await stored();
    rmSync(join(r.dir, 'parts', 'ids.json'));
    expect((await store.getOrCreate(spec, c.compute)).cached).toBe(false);
    rmSync(join(r.dir, 'artifact.json'));
    expect((await store.getOrCreate(spec, c.compute)).cached).toBe(false);
    writeFileSync(join(r.dir, 'artifact.json'), '{"schemaVersion": 1');
    expect((await store.getOrCreate(spec, c.compute)).cached).toBe(false);
    expect(c.calls()).toBe(4);
    expect(entries(join(root, 'quarantine'))).toHaveLength(3);
  });

  it('verify finds a same-size modification; a hit quarantines it, warns naming the file and recomputes', async () => {
    const { store, c, r, ev } = await stored();
    writeFileSync(join(r.dir, 'vectors.bin'), Buffer.alloc(1000, 8));
    const report = await store.verify();
    expect(report.checked).toBe(1);
    expect(report.corrupt).toHaveLength(1);
    expect(report.corrupt[0]?.problems[0]).toMatch(/vectors\.bin has SHA-256 [0-9a-f]{64}/);
    const again = await store.getOrCreate(spec, c.compute);
    expect(again.cached).toBe(false);
    expect(c.calls()).toBe(2);
    const warning = ev.list.find((e) => e.kind === 'warning');
    expect(warning?.kind === 'warning' && warning.message).toContain(
      `${join(r.dir, 'vectors.bin')} has SHA-256`,
    );
    expect(readFileSync(join(again.dir, 'vectors.bin')).equals(Buffer.alloc(1000, 7))).toBe(true);
    expect((await store.verify()).corrupt).toEqual([]);
  });

  it('a same-size edit of the manifest itself (its meta) is caught by its own hash', async () => {
    const { store, c, r } = await stored();
    const path = join(r.dir, 'artifact.json');
    const text = readFileSync(path, 'utf8');
    expect(text).toContain('"rows": 2');
    writeFileSync(path, text.replace('"rows": 2', '"rows": 3'));
    const report = await store.verify();
    expect(report.corrupt[0]?.problems.join(' ')).toContain('does not hash to its manifestSha256');
    expect((await store.getOrCreate(spec, c.compute)).cached).toBe(false);
    expect(readFileSync(path, 'utf8')).toContain('"rows": 2');
  });

  it('a large file verified once in this process is not hashed again on the next hit', async () => {
    const ev = events();
    const store = await ArtifactStore.open({ root, onEvent: ev.onEvent });
    const big = Buffer.alloc(2 << 20, 3);
    const compute: ComputeFn = async (dir) => writeFile(join(dir, 'big.bin'), big);
    const r = await store.getOrCreate(spec, compute);
    // Whole seconds, so the time can be put back exactly.
    const mtime = new Date(1_700_000_000_000);
    utimesSync(join(r.dir, 'big.bin'), mtime, mtime);
    expect((await store.getOrCreate(spec, compute)).cached).toBe(true); // hashed, remembered
    // Same size, same mtime and inode: only a re-hash could tell. The memo serves the hit;
    // `verify: true` hashes again and finds it.
    writeFileSync(join(r.dir, 'big.bin'), Buffer.alloc(2 << 20, 4));
    utimesSync(join(r.dir, 'big.bin'), mtime, mtime);
    expect((await store.getOrCreate(spec, compute)).cached).toBe(true);
    expect((await store.getOrCreate(spec, compute, { verify: true })).cached).toBe(false);
  });

  it("throws ARTIFACT_CORRUPT naming the path with onCorrupt: 'throw'", async () => {
    const { store, c, r } = await stored({ onCorrupt: 'throw' });
    truncateSync(join(r.dir, 'vectors.bin'), 0);
    const error = await store.getOrCreate(spec, c.compute).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ArtifactCorruptError);
    expect(error).toMatchObject({ code: 'ARTIFACT_CORRUPT' });
    expect((error as Error).message).toContain(join(r.dir, 'vectors.bin'));
    expect((error as Error).message).toContain('bfe cache verify --quarantine');
    expect((error as ArtifactCorruptError).suggestion).toContain('bfe cache verify');
    expect(c.calls()).toBe(1);
  });

  it('verify --quarantine moves corrupt artifacts aside, and a manifest edited to another key is caught', async () => {
    const { store, r } = await stored();
    const manifest = JSON.parse(readFileSync(join(r.dir, 'artifact.json'), 'utf8')) as {
      config: unknown;
    };
    manifest.config = { dtype: 'float16', batch: 32 };
    writeFileSync(join(r.dir, 'artifact.json'), JSON.stringify(manifest));
    const report = await store.verify({ quarantine: true });
    expect(report.corrupt[0]?.problems.join(' ')).toContain('do not hash to');
    expect(report.corrupt[0]?.quarantinedTo).toMatch(/quarantine/);
    expect(existsSync(r.dir)).toBe(false);
  });
});

describe('ArtifactStore: an unwritable cache', () => {
  it('names the directory and BFE_CACHE_DIR for a read-only folder, as an ordinary user', async () => {
    // Root may write anywhere, so the open runs in a child process as an ordinary user: this
    // user where it is not root; as root, nobody in a user namespace of its own (`unshare`: no
    // capability, so the folder's mode binds it). The same test runs as root and as anyone else.
    const folder = join(root, 'read-only');
    mkdirSync(folder);
    chmodSync(folder, 0o500);
    const cache = join(folder, 'cache');
    const child = await openAsOrdinaryUser(cache, root);
    expect(child.uid).not.toBe(0);
    expect(child.error).toMatchObject({
      name: 'CacheUnwritableError',
      code: 'CACHE_UNWRITABLE',
      dir: cache,
    });
    expect(child.error.message).toContain(cache);
    expect(child.error.suggestion).toContain('BFE_CACHE_DIR');
  });

  it('reports a file standing where the cache directory should be', async () => {
    const cache = join(root, 'cache');
    writeFileSync(cache, 'not a directory');
    const error = await ArtifactStore.open({ root: cache }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CacheUnwritableError);
    expect(error).toMatchObject({ code: 'CACHE_UNWRITABLE' });
    expect((error as Error).message).toContain(cache);
  });
});

describe('ArtifactStore: interruption', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`on ${signal} mid-compute removes the temporary dir and the lock, and exits ${code}`, async () => {
      const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
      const listeners = process.listenerCount(signal);
      const store = await ArtifactStore.open({ root });
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      let finish!: (e: Error) => void;
      const pending = store.getOrCreate(spec, async (dir) => {
        writeFileSync(join(dir, 'partial.bin'), Buffer.alloc(100));
        started();
        await new Promise<void>((_, reject) => (finish = reject));
      });
      await running;
      expect(process.listenerCount(signal)).toBe(listeners + 1);
      expect(entries(join(root, 'tmp'))).toHaveLength(1);
      // The lock directory and its holder record (pid, host, stage).
      expect(entries(join(root, 'locks')).sort()).toEqual([
        `${artifactKey(spec)}.lock`,
        `${artifactKey(spec)}.owner`,
      ]);
      process.emit(signal, signal);
      expect(exit).toHaveBeenCalledWith(code);
      expect(entries(join(root, 'tmp'))).toEqual([]);
      expect(entries(join(root, 'locks'))).toEqual([]);
      // Here the process would be gone; let the mocked one unwind.
      finish(new Error('interrupted'));
      await expect(pending).rejects.toThrow('interrupted');
      expect(existsSync(store.artifactDir('encode', artifactKey(spec)))).toBe(false);
      expect(process.listenerCount(signal)).toBe(listeners);
    });
  }
});

describe('ArtifactStore.list and gc', () => {
  it('lists artifacts with stage, size, creation and last use; a hit records the use', async () => {
    const store = await ArtifactStore.open({ root });
    const r = await store.getOrCreate(spec, counting().compute);
    const old = new Date('2020-01-01T00:00:00Z');
    utimesSync(join(r.dir, 'artifact.json'), old, old);
    const [before] = await store.list();
    expect(before).toMatchObject({
      stage: 'encode',
      key: r.key,
      bytes: 1011,
      files: 2,
      codeVersion: '1',
      createdAt: r.manifest.createdAt,
      lastUsedAt: old.toISOString(),
      manifestOk: true,
    });
    await store.getOrCreate(spec, counting().compute);
    await vi.waitFor(
      async () => {
        const [after] = await store.list();
        expect(Date.parse(after?.lastUsedAt ?? '')).toBeGreaterThan(old.getTime());
      },
      { timeout: 30_000 },
    );
  });

  it('removes leftovers of a crashed run (temporary dir, stale lock) and quarantined artifacts', async () => {
    const store = await ArtifactStore.open({ root });
    const key = artifactKey(spec);
    const leftover = join(root, 'tmp', `${key}.99999.abc123`);
    mkdirSync(leftover);
    writeFileSync(join(leftover, 'partial.bin'), Buffer.alloc(300));
    const staleLock = join(root, 'locks', `${key}.lock`);
    mkdirSync(staleLock);
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(staleLock, old, old);
    mkdirSync(join(root, 'quarantine', `encode.${key}.x`));

    const dry = await store.gc({ dryRun: true });
    expect(dry.removed.map((r) => r.kind).sort()).toEqual(['lock', 'quarantine', 'tmp']);
    expect(existsSync(leftover)).toBe(true);

    const report = await store.gc();
    expect(report.removed.find((r) => r.kind === 'tmp')).toMatchObject({
      path: leftover,
      bytes: 300,
    });
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(staleLock)).toBe(false);
    expect(entries(join(root, 'quarantine'))).toEqual([]);
    expect((await store.getOrCreate(spec, counting().compute)).cached).toBe(false);
  });

  it('leaves the temporary dir and lock of a computation in progress alone', async () => {
    const store = await ArtifactStore.open({ root });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let finish!: () => void;
    const pending = store.getOrCreate(spec, async (dir) => {
      writeFileSync(join(dir, 'out.bin'), 'x');
      started();
      await new Promise<void>((r) => (finish = r));
    });
    await running;
    const report = await store.gc();
    expect(report.removed).toEqual([]);
    expect(report.busy).toHaveLength(1);
    finish();
    expect((await pending).cached).toBe(false);
  });

  it('with keepDays removes artifacts unused for longer, and keeps recent ones', async () => {
    const store = await ArtifactStore.open({ root });
    const oldOne = await store.getOrCreate(spec, counting().compute);
    const recent = await store.getOrCreate({ ...spec, version: '2' }, counting().compute);
    const old = new Date(Date.now() - 10 * 86_400_000);
    utimesSync(join(oldOne.dir, 'artifact.json'), old, old);

    expect((await store.gc({ keepDays: 30 })).removed).toEqual([]);
    const dry = await store.gc({ keepDays: 7, dryRun: true });
    expect(dry.removed.map((r) => r.path)).toEqual([oldOne.dir]);
    expect(existsSync(oldOne.dir)).toBe(true);

    const report = await store.gc({ keepDays: 7 });
    expect(report.removed).toMatchObject([{ kind: 'artifact', path: oldOne.dir }]);
    expect(report.removed[0]?.bytes).toBeGreaterThan(1011); // the files and the manifest
    expect(report.kept).toBe(1);
    expect(existsSync(oldOne.dir)).toBe(false);
    expect(existsSync(recent.dir)).toBe(true);
    expect(entries(join(root, 'tmp'))).toEqual([]);
  });
});

describe('ArtifactStore: lock holders, reader leases, leftovers of dead processes', () => {
  // A pid no process has (above Linux's pid_max of 2^22).
  const deadPid = 4_194_304 + 7;

  it("a wait names the holder's pid and when its lock goes stale; the call's wait is timed apart", async () => {
    const ev = events();
    const store = await ArtifactStore.open({ root, onEvent: ev.onEvent, staleMs: 20_000 });
    const key = artifactKey(spec);
    const release = await lock(join(root, 'locks', key), { realpath: false, stale: 20_000 });
    const owner = { pid: process.ppid, hostname: hostname(), stage: 'encode', since: 'now' };
    writeFileSync(join(root, 'locks', `${key}.owner`), JSON.stringify(owner));
    const pending = store.getOrCreate(spec, counting().compute);
    await vi.waitFor(() => expect(ev.list.map((e) => e.kind)).toContain('wait'), {
      timeout: 30_000,
    });
    const wait = ev.list.find((e) => e.kind === 'wait');
    expect(wait).toMatchObject({ kind: 'wait', stage: 'encode', key, pid: process.ppid });
    expect(wait?.kind === 'wait' && wait.alive).toBe(true);
    const staleIn = wait?.kind === 'wait' ? wait.staleInSeconds : null;
    expect(staleIn).toBeGreaterThan(0);
    expect(staleIn).toBeLessThanOrEqual(20);
    await release();
    const result = await pending;
    expect(result.waitSeconds).toBeGreaterThan(0);
    expect(result.waitSeconds).toBeLessThanOrEqual(result.seconds);
    // Released: neither the lock nor the holder record is left.
    expect(entries(join(root, 'locks'))).toEqual([]);
  });

  it('gc --keep-days leaves an artifact another live process leases, and drops leases of dead ones', async () => {
    const store = await ArtifactStore.open({ root });
    const a = await store.getOrCreate(spec, counting().compute);
    const b = await store.getOrCreate({ ...spec, version: '2' }, counting().compute);
    const old = new Date(Date.now() - 10 * 86_400_000);
    for (const r of [a, b]) utimesSync(join(r.dir, 'artifact.json'), old, old);
    // The parent process (alive) reads a; a dead process once read b.
    writeFileSync(join(root, 'leases', `${process.ppid}@${hostname()}.aa`), `${a.key}\n`);
    writeFileSync(join(root, 'leases', `${deadPid}@${hostname()}.bb`), `${b.key}\n`);
    // This process's own leases do not hold gc back (it would be collecting under itself).
    const report = await store.gc({ keepDays: 7 });
    expect(report.busy).toEqual([a.dir]);
    expect(existsSync(a.dir)).toBe(true);
    expect(existsSync(b.dir)).toBe(false);
    expect(report.removed.map((r) => r.kind).sort()).toEqual(['artifact', 'lease']);
    expect(entries(join(root, 'leases')).filter((n) => n.startsWith(`${deadPid}@`))).toEqual([]);
  });

  it("the next holder of a key removes a dead process's temporary directory of that key", async () => {
    const store = await ArtifactStore.open({ root });
    const key = artifactKey(spec);
    const dead = join(root, 'tmp', `${key}.${deadPid}.abc123`);
    const other = join(root, 'tmp', `${'e'.repeat(64)}.${deadPid}.abc123`);
    mkdirSync(dead, { recursive: true });
    mkdirSync(other, { recursive: true });
    await store.getOrCreate(spec, counting().compute);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(other)).toBe(true); // another key's: gc's business
  });
});

interface ChildOpen {
  readonly uid: number;
  readonly error: { name: string; code: string; dir: string; message: string; suggestion: string };
}

/**
 * Opens an {@link ArtifactStore} at `cache` in a child process that is not root (under root:
 * `unshare --user --map-user=65534`, nobody without capabilities, still the owner of root's
 * files, so it reads the checkout wherever it is) and returns the child's uid and the error
 * the open threw, by value. `tmp` is the child's TMPDIR.
 */
function openAsOrdinaryUser(cache: string, tmp: string): Promise<ChildOpen> {
  const store = new URL('./store.ts', import.meta.url).href;
  const script = `
    const { ArtifactStore } = await import(${JSON.stringify(store)});
    const error = await ArtifactStore.open({ root: process.argv[1] }).then(() => undefined, (e) => e);
    const { name, code, dir, message, suggestion } = error ?? {};
    console.log(JSON.stringify({ uid: process.getuid(), error: { name: error?.constructor.name ?? name, code, dir, message, suggestion } }));`;
  const node = [process.execPath, '--conditions=@bfe/source', '--import', 'tsx'];
  const command = [...ordinaryUserPrefix(), ...node, '--input-type=module', '-e', script, cache];
  return new Promise((resolve, reject) => {
    execFile(
      command[0]!,
      command.slice(1),
      { cwd: fileURLToPath(new URL('.', import.meta.url)), env: { ...process.env, TMPDIR: tmp } },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as ChildOpen);
      },
    );
  });
}
