import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import {
  ArtifactStore,
  remoteCacheFromEnv,
  type ArtifactResult,
} from '../apps/runner/src/cache/index.ts';
import { runBfe } from './helpers.ts';

const tmp = (): string => tmpDir('bfe-cache-cli-');

/** A cache with two artifacts of stage `encode` and one of `score`. */
async function populated(): Promise<{ root: string; made: ArtifactResult[] }> {
  const root = join(tmp(), 'cache');
  const store = await ArtifactStore.open({ root });
  const made: ArtifactResult[] = [];
  for (const [stage, version] of [
    ['encode', '1'],
    ['encode', '2'],
    ['score', '1'],
  ] as const) {
    made.push(
      await store.getOrCreate(
        { stage, version, config: { k: 10 }, inputs: { data: 'a'.repeat(64) } },
        async (dir) => {
          await writeFile(join(dir, 'out.bin'), Buffer.alloc(2048, 3));
        },
      ),
    );
  }
  // The artifacts are not read any more: gc in the CLI's process may remove them.
  store.close();
  return { root, made };
}

describe('bfe cache', () => {
  it('ls lists stage, key prefix, size and times; honours --cache-dir and BFE_CACHE_DIR', async () => {
    const { root, made } = await populated();
    const human = await runBfe(['cache', 'ls', '--cache-dir', root], {});
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/STAGE\s+KEY\s+SIZE\s+CREATED\s+LAST USED/);
    for (const m of made) expect(human.stdout).toContain(m.key.slice(0, 12));
    expect(human.stdout).toContain('2.0 KiB');
    expect(human.stdout).toContain(`3 artifact(s), 6.0 KiB in ${root}`);

    const json = await runBfe(['cache', 'ls', '--json'], { BFE_CACHE_DIR: root });
    expect(json.code, json.stderr).toBe(0);
    const listed = JSON.parse(json.stdout) as {
      root: string;
      artifacts: { stage: string; key: string; bytes: number; lastUsedAt: string }[];
    };
    expect(listed.root).toBe(root);
    expect(listed.artifacts.map((a) => [a.stage, a.key, a.bytes])).toEqual(
      expect.arrayContaining(made.map((m) => [m.manifest.stage, m.key, 2048])),
    );
    expect(listed.artifacts).toHaveLength(3);

    const empty = await runBfe(['cache', 'ls'], { BFE_CACHE_DIR: join(tmp(), 'none') });
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('No artifacts in');
  });

  it('verify exits 0 on an intact cache and 1 listing a modified artifact; --quarantine moves it', async () => {
    const { root, made } = await populated();
    const ok = await runBfe(['cache', 'verify', '--cache-dir', root], {});
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('Verified 3 artifact(s)');
    expect(ok.stdout).toContain('0 corrupt');

    const bad = made[1] as ArtifactResult;
    writeFileSync(join(bad.dir, 'out.bin'), Buffer.alloc(2048, 4)); // same size, other bytes
    const found = await runBfe(['cache', 'verify', '--cache-dir', root], {});
    expect(found.code).toBe(1);
    expect(found.stdout).toContain(`CORRUPT encode ${bad.key}`);
    expect(found.stdout).toContain(`${join(bad.dir, 'out.bin')} has SHA-256`);
    expect(found.stdout).toContain('1 corrupt');
    expect(found.stderr).toContain('--quarantine');

    const json = await runBfe(
      ['cache', 'verify', '--cache-dir', root, '--json', '--quarantine'],
      {},
    );
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { corrupt: { key: string; quarantinedTo: string }[] };
    expect(report.corrupt.map((c) => c.key)).toEqual([bad.key]);
    expect(existsSync(bad.dir)).toBe(false);
    expect(readdirSync(join(root, 'quarantine'))).toHaveLength(1);

    const after = await runBfe(['cache', 'verify', '--cache-dir', root], {});
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('Verified 2 artifact(s)');
  });

  it('gc removes leftovers and quarantine, and with --keep-days unused artifacts; --dry-run removes nothing', async () => {
    const { root, made } = await populated();
    const leftover = join(root, 'tmp', `${'b'.repeat(64)}.4242.abcdef`);
    mkdirSync(leftover);
    writeFileSync(join(leftover, 'partial.bin'), 'x');
    mkdirSync(join(root, 'quarantine', 'score.x'));
    const unused = made[0] as ArtifactResult;
    const old = new Date(Date.now() - 40 * 86_400_000);
    utimesSync(join(unused.dir, 'artifact.json'), old, old);

    const dry = await runBfe(
      ['cache', 'gc', '--cache-dir', root, '--keep-days', '30', '--dry-run'],
      {},
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`would remove tmp ${leftover}`);
    expect(dry.stdout).toContain(`would remove artifact ${unused.dir}`);
    expect(dry.stdout).toMatch(/encode: last used 40\.0 days ago/);
    expect(existsSync(leftover) && existsSync(unused.dir)).toBe(true);

    const kept = await runBfe(['cache', 'gc', '--cache-dir', root], {});
    expect(kept.code, kept.stderr).toBe(0);
    expect(existsSync(leftover)).toBe(false);
    expect(readdirSync(join(root, 'quarantine'))).toEqual([]);
    expect(existsSync(unused.dir)).toBe(true);
    expect(kept.stdout).toContain('3 artifact(s) kept');

    const pruned = await runBfe(['cache', 'gc', '--keep-days', '30'], { BFE_CACHE_DIR: root });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(existsSync(unused.dir)).toBe(false);
    for (const m of made.slice(1)) expect(existsSync(m.dir)).toBe(true);
    expect(pruned.stdout).toContain('2 artifact(s) kept');
  });

  it('rejects a bad --keep-days with CONFIG_INVALID and exit 2', async () => {
    const r = await runBfe(['cache', 'gc', '--keep-days', 'soon', '--cache-dir', tmp()], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain('--keep-days');
  });

  it('keygen writes a publisher key pair the team cache reads, and never over an existing one', async () => {
    const out = join(tmp(), 'keys');
    const r = await runBfe(['cache', 'keygen', '--out', out], {});
    expect(r.code, r.stderr).toBe(0);
    const signing = join(out, 'cache-signing.pem');
    const verify = join(out, 'cache-verify.pem');
    expect(statSync(signing).mode & 0o777).toBe(0o600);
    const id = /publisher key ([0-9a-f]{64})/.exec(r.stdout)?.[1];
    const env = { TURBO_API: 'http://127.0.0.1:9', TURBO_TOKEN: 't', TURBO_TEAM: 'bfe' };
    const publisher = remoteCacheFromEnv({ ...env, BFE_CACHE_SIGNING_KEY: signing })?.publisher;
    const reader = remoteCacheFromEnv({ ...env, BFE_CACHE_VERIFY_KEY: verify })?.publisher;
    expect([publisher?.keyId, reader?.keyId]).toEqual([id, id]);
    expect([publisher?.signingKey === undefined, reader?.signingKey]).toEqual([false, undefined]);
    const before = readFileSync(signing, 'utf8');
    const again = await runBfe(['cache', 'keygen', '--out', out], {});
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${signing} already exists`);
    expect(readFileSync(signing, 'utf8')).toBe(before);
  });
});
