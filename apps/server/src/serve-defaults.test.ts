import { describe, expect, it } from 'vitest';
import { defaultEncodeWorkers } from './serve.js';

describe('defaultEncodeWorkers', () => {
  it('is one query encoder worker per core, at most 2, and at least 1', () => {
    expect([0, 1, 2, 3, 16].map((cores) => defaultEncodeWorkers(cores))).toEqual([1, 1, 2, 2, 2]);
  });
});
