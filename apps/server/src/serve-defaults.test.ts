import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { runServeCli } from './cli.js';
import { defaultEncodeWorkers } from './serve.js';

describe('defaultEncodeWorkers', () => {
  it('is one query encoder worker per core, at most 2, and at least 1', () => {
    expect([0, 1, 2, 3, 16].map((cores) => defaultEncodeWorkers(cores))).toEqual([1, 1, 2, 2, 2]);
  });
});

describe('bfe serve --encode-batch', () => {
  it('refuses a batch below 1 or not a whole number with exit 2, before opening the store', async () => {
    for (const value of ['0', '1.5', 'many']) {
      const store = tmpDir();
      expect(await runServeCli(['--store', store, '--port', '0', '--encode-batch', value])).toBe(2);
      expect(readdirSync(store)).toEqual([]); // no store opened, no lock taken
    }
  });
});
