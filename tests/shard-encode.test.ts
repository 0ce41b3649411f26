import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { bankContentHash, bankManifestSchema } from '@bfe/encoder';
import {
  startCacheServer,
  type TestCacheServer,
} from '../apps/runner/src/cache/testing/cache-server.ts';
import { freshDir, sharedTask, useTinyModel, writeExperiment } from './fixtures/run/setup.ts';
import { runBfe } from './helpers.ts';

// A sharded encode through one team cache (turborepo-remote-cache on 127.0.0.1, a free port):
// two processes with separate local caches each compute one slice (`--shard 0/2`, `--shard
// 1/2`) and upload it; a third, with an empty cache, assembles the bank from the slices. Its
// content hash (bank.json without timings: every Arrow file's SHA-256) equals an unsharded
// encode's, and so do the results.

const tiny = useTinyModel();
const serverRoot = suiteTmpDir('bfe-shard-server-');
let server: TestCacheServer;
beforeAll(async () => {
  server = await startCacheServer({ storage: serverRoot() });
}, 90_000);
afterAll(async () => {
  await server?.stop();
});

interface StageOut {
  readonly name: string;
  readonly key: string;
  readonly source: 'local' | 'remote' | 'computed';
}

/** 30 memories in chunks of `chunkSize` texts: several chunks, so each slice holds some. */
function experiment(chunkSize: number): Record<string, unknown> {
  return {
    name: `tiny-shards-${chunkSize}`,
    dataset: { name: `lmeb:${sharedTask}` },
    split: { policy: 'none' },
    model: { name: 'tiny', chunkSize },
    scorer: { k: 4, alpha: 0.5, kSweep: [2, 4] },
    eval: { resamples: 200 },
  };
}

async function bfe(args: string[], env: Record<string, string | undefined>) {
  const r = await runBfe(args, { ...tiny.env(), ...env });
  if (r.code !== 0) throw new Error(`bfe ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return JSON.parse(r.stdout) as { stages: StageOut[]; runDir?: string };
}

/** A full run (`--json`) on its own cache; its encode artifact's bank content hash. */
async function fullRun(file: string, dir: string, env: Record<string, string | undefined>) {
  const cache = join(dir, 'cache');
  const out = await bfe(
    ['run', file, '--cache-dir', cache, '--runs-dir', join(dir, 'runs'), '--json'],
    env,
  );
  const encode = out.stages.find((s) => s.name === 'encode')!;
  const bank = bankManifestSchema.parse(
    JSON.parse(
      readFileSync(join(cache, 'objects', 'encode', encode.key, 'bank', 'bank.json'), 'utf8'),
    ),
  );
  const results = readFileSync(join(out.runDir!, 'results.json'));
  return { out, bankHash: bankContentHash(bank), results };
}

const sources = (stages: readonly StageOut[]) =>
  Object.fromEntries(stages.map((s) => [s.name, s.source]));

describe('bfe run --shard i/n through one team cache', () => {
  it('two slices from two machines, assembled by a third, give the unsharded bank and results', async () => {
    const root = freshDir(tiny.root(), 'shards');
    const file = writeExperiment(root, 'tiny.yaml', experiment(4));
    const local = { BFE_REMOTE_CACHE: 'off' };
    const reference = await fullRun(file, freshDir(root, 'single'), local);

    // One machine after the other: two PUTs of one key at the same moment can interleave into a
    // corrupt file on the test server's storage (below), and the plan both slices upload is such
    // a key — a corrupt plan sends the assembler to encode everything itself.
    const slices = [];
    for (const shard of ['0/2', '1/2'])
      slices.push(
        await bfe(
          ['run', file, '--shard', shard, '--cache-dir', join(freshDir(root, 'm'), 'c'), '--json'],
          server.env,
        ),
      );
    const [zero, one] = slices;
    expect(zero!.stages.find((s) => s.name === 'encode-shard 0/2')?.source).toBe('computed');
    expect(one!.stages.find((s) => s.name === 'encode-shard 1/2')?.source).toBe('computed');

    const assembled = await fullRun(file, freshDir(root, 'assemble'), server.env);
    // The test server stores with fs-blob-store (a plain write stream per PUT, no rename): the
    // dataset stage may come from the server or be computed again; either way it is right. The
    // slices, each uploaded by one machine only, must come from the server.
    expect(['remote', 'computed']).toContain(sources(assembled.out.stages).dataset);
    expect(sources(assembled.out.stages)).toMatchObject({
      'encode-shard 0/2': 'remote',
      'encode-shard 1/2': 'remote',
      encode: 'computed',
    });
    expect(assembled.bankHash).toBe(reference.bankHash);
    expect(assembled.out.stages.find((s) => s.name === 'encode')?.key).toBe(
      reference.out.stages.find((s) => s.name === 'encode')?.key,
    );
    expect(assembled.results.equals(reference.results)).toBe(true);
  }, 300_000);

  it('computes a missing slice itself', async () => {
    const root = freshDir(tiny.root(), 'missing');
    const file = writeExperiment(root, 'tiny.yaml', experiment(5));
    const reference = await fullRun(file, freshDir(root, 'single'), { BFE_REMOTE_CACHE: 'off' });
    await bfe(
      ['run', file, '--shard', '1/3', '--cache-dir', join(freshDir(root, 'm'), 'c'), '--json'],
      server.env,
    );
    const assembled = await fullRun(file, freshDir(root, 'assemble'), server.env);
    expect(sources(assembled.out.stages)).toMatchObject({
      'encode-shard 0/3': 'computed',
      'encode-shard 1/3': 'remote',
      'encode-shard 2/3': 'computed',
      encode: 'computed',
    });
    expect(assembled.bankHash).toBe(reference.bankHash);
  }, 300_000);
});
