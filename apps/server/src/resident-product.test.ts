import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { runServeCli } from './cli.js';
import { liveServer, post } from './testing/live.js';

const WORDS = ['cat', 'dog', 'garden', 'piano', 'river', 'market', 'winter', 'letter', 'train'];
const memories = Array.from({ length: 40 }, (_, i) => ({
  id: `m${i}`,
  text: Array.from({ length: 3 + (i % 5) }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(
    ' ',
  ),
}));
const queries = ['cat in the garden', 'a letter by train', 'winter river market', 'piano'];

describe('bfe serve --resident-product', () => {
  it('int8 resident banks on a kernel worker answer every search as the float32 ones', async () => {
    const answers: unknown[][] = [];
    for (const residentProduct of ['fp32', 'int8'] as const) {
      const server = await liveServer({ residentProduct, kernelWorkers: 1 });
      try {
        expect((await post(server.port, '/v1/banks/b/memories', { memories })).status).toBe(200);
        const got: unknown[] = [];
        // Three rounds: a bank is made resident from its second search on.
        for (let round = 0; round < 3; round++)
          for (const query of queries) {
            const found = await post(server.port, '/v1/banks/b/search', { query, k: 10 });
            expect(found.status).toBe(200);
            got.push(
              found.json().results.map((r: { id: string; score: number }) => [r.id, r.score]),
            );
          }
        answers.push(got);
      } finally {
        await server.close();
      }
    }
    expect(answers[1]).toEqual(answers[0]);
  });

  it('refuses another product with exit 2 before opening the store', async () => {
    for (const value of ['fp16', 'INT8', '']) {
      const store = tmpDir();
      const argv = ['--store', store, '--port', '0', '--resident-product', value];
      expect(await runServeCli(argv)).toBe(2);
      expect(readdirSync(store)).toEqual([]);
    }
  });
});
