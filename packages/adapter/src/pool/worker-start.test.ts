import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { builtWorker } from './worker-start.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A package folder with `src` and `dist` files, each with its modification time (seconds). */
function tree(files: Record<string, number>): URL {
  const root = mkdtempSync(join(tmpdir(), 'bfe-worker-start-'));
  roots.push(root);
  mkdirSync(join(root, 'src', 'testing'), { recursive: true });
  mkdirSync(join(root, 'src', 'pool'), { recursive: true });
  mkdirSync(join(root, 'dist', 'pool'), { recursive: true });
  for (const [path, seconds] of Object.entries(files)) {
    writeFileSync(join(root, path), '');
    utimesSync(join(root, path), seconds, seconds);
  }
  return pathToFileURL(join(root, 'src') + '/');
}

describe('builtWorker', () => {
  it('takes dist/pool/train-worker.js when every source has an output at least as new', () => {
    const src = tree({
      'src/pool/train-worker.ts': 100,
      'src/loss.ts': 100,
      'src/loss.test.ts': 500,
      'src/testing/synthetic.ts': 500,
      'dist/pool/train-worker.js': 200,
      'dist/loss.js': 100,
    });
    expect(builtWorker(src)?.href).toBe(new URL('../dist/pool/train-worker.js', src).href);
  });

  it('refuses a build older than a source file in a room', () => {
    const src = tree({
      'src/pool/train-worker.ts': 100,
      'src/pool/step-plan.ts': 300,
      'dist/pool/train-worker.js': 200,
      'dist/pool/step-plan.js': 200,
    });
    expect(builtWorker(src)).toBeUndefined();
  });

  it('refuses a build older than any source file', () => {
    const src = tree({
      'src/pool/train-worker.ts': 100,
      'src/loss.ts': 300,
      'dist/pool/train-worker.js': 200,
      'dist/loss.js': 200,
    });
    expect(builtWorker(src)).toBeUndefined();
  });

  it('refuses a build that lacks a source file’s output, or no build at all', () => {
    const partial = tree({
      'src/pool/train-worker.ts': 100,
      'src/slices.ts': 100,
      'dist/pool/train-worker.js': 200,
    });
    expect(builtWorker(partial)).toBeUndefined();
    const none = tree({ 'src/pool/train-worker.ts': 100 });
    rmSync(new URL('../dist', none), { recursive: true });
    expect(builtWorker(none)).toBeUndefined();
  });
});
