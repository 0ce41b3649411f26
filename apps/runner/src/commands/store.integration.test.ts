import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readArrowFile } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore, manifestSchema } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const bin = fileURLToPath(new URL('../bin.ts', import.meta.url));

/** `bfe …` as a child process, from source: its exit code, stdout and stderr. */
function bfe(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--conditions=@bfe/source', '--import', 'tsx', bin, ...args],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** An fp32 store made with the fake embedder: `bfe store` needs no model to read it. */
async function makeStore(): Promise<string> {
  const dir = tmpDir();
  const store = await MemoryStore.open(dir, {
    embedder: fakeEmbedder(),
    compactSegments: 0,
    codec: 'fp32',
  });
  await store.add([
    { id: 'a', bank: 'alice', text: 'the cat sat on the mat', meta: { n: 1 } },
    { id: 'b', bank: 'bob', text: 'a dog ran far away' },
  ]);
  await store.flush();
  await store.add([{ id: 'c', bank: 'alice', text: 'hello world again' }]);
  await store.flush();
  await store.delete(['a'], { bank: 'alice' });
  await store.close({ flush: false });
  return dir;
}

describe('bfe store', () => {
  it('stats (table and JSON), verify, export, compact; verify finds a flipped byte', async () => {
    const dir = await makeStore();
    const help = await bfe(['store', 'verify', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: bfe store verify \[options\] <dir>/);

    const table = await bfe(['store', 'stats', dir]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/codec +fp32/);
    expect(table.stdout).toMatch(/^alice +1 +3 +2 /m);
    const json = await bfe(['store', 'stats', dir, '--json']);
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout) as { memories: number; banks: { bank: string }[] };
    expect(stats.memories).toBe(2);
    expect(stats.banks.map((b) => b.bank)).toEqual(['alice', 'bob']);

    const intact = await bfe(['store', 'verify', dir]);
    expect(intact.code).toBe(0);
    expect(intact.stdout).toMatch(/^Intact: 3 segment\(s\) intact/m);

    const out = join(tmpDir(), 'export');
    const exported = await bfe(['store', 'export', dir, '--out', out, '--json']);
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ memories: 2, tokens: 8 });
    const memories = readArrowFile(readFileSync(join(out, 'memories.arrow')));
    expect(memories.getChild('id')!.toArray()).toEqual(['c', 'b']);
    expect((await bfe(['store', 'export', dir, '--out', out])).code).toBe(2);

    const compacted = await bfe(['store', 'compact', dir]);
    expect(compacted.code).toBe(0);
    expect(compacted.stdout).toMatch(/^alice +2 +1 +2 +1 +1$/m);
    expect(compacted.stdout).toMatch(/Segments 3 → 2, rows 2 → 1/);

    // A codec migration rewrites every segment; the store keeps the new codec from then on.
    expect((await bfe(['store', 'compact', dir, '--codec', 'sq9'])).code).toBe(2);
    const migrated = await bfe(['store', 'compact', dir, '--codec', 'sq8']);
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toContain('Codec fp32 → sq8.');
    const after = manifestSchema.parse(
      JSON.parse(readFileSync(join(dir, 'MANIFEST.json'), 'utf8')),
    );
    expect(after.codec).toBe('sq8');
    expect(after.segments.map((x) => x.codec)).toEqual(after.segments.map(() => 'sq8'));

    const manifest = manifestSchema.parse(
      JSON.parse(readFileSync(join(dir, 'MANIFEST.json'), 'utf8')),
    );
    const file = join(dir, manifest.segments[0]!.file);
    const bytes = readFileSync(file);
    bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0x80;
    writeFileSync(file, bytes);
    const bad = await bfe(['store', 'verify', dir]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(
      `BAD ${manifest.segments[0]!.file}: store segment ${file} is corrupt`,
    );
    expect(bad.stdout).toMatch(/NOT INTACT: 1 problem/);
    expect(bad.stderr).toMatch(/Restore the store directory from a backup/);
  }, 120_000);

  it('exits 2 with a clear message for a directory that is not a store, or a bad option', async () => {
    const dir = tmpDir();
    for (const cmd of ['stats', 'verify', 'compact']) {
      const r = await bfe(['store', cmd, join(dir, 'absent')]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/bfe: DATA_MISSING: store directory .*absent does not exist/);
    }
    const r = await bfe(['store', 'export', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option '--out <dir>'/);
  }, 120_000);
});
