import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArtifactCorruptError } from '@bfe/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import type { Adapter } from './adapter.js';
import {
  adapterWeightsSha256,
  loadAdapter,
  parseAdapter,
  saveAdapter,
  serializeAdapter,
} from './file.js';
import { parseTrainOptions, trainingConfigOf } from './options.js';
import { Prng } from './prng.js';

let root: string;
beforeEach(() => {
  root = tmpDir('bfe-adapter-');
});

function adapter(dim = 24, rank = 4): Adapter {
  const prng = new Prng(5);
  const a = new Float32Array(rank * dim).map(() => 0.02 * prng.normal());
  const b = new Float32Array(dim * rank).map(() => 1e-3 * prng.normal());
  b[0] = -0; // signed zeros and tiny values survive
  b[1] = 1e-40;
  return {
    dim,
    rank,
    a,
    b,
    meta: {
      seed: 42,
      epoch: 1,
      splitHash: 'a'.repeat(64),
      modelHash: null,
      trainingConfig: trainingConfigOf(parseTrainOptions({ rank })),
    },
  };
}

function bits(x: Float32Array): Uint32Array {
  return new Uint32Array(x.buffer, x.byteOffset, x.length);
}

describe('saveAdapter / loadAdapter', () => {
  it('round-trips weights bit for bit and every metadata field, leaving no temporary file', async () => {
    const original = adapter();
    const path = join(root, 'runs', 'adapter-epoch1.json');
    const { weightsSha256, bytes } = await saveAdapter(path, original);
    expect(readdirSync(join(root, 'runs'))).toEqual(['adapter-epoch1.json']);
    expect(bytes).toBe(readFileSync(path).length);
    const loaded = await loadAdapter(path);
    expect(bits(loaded.a)).toEqual(bits(original.a));
    expect(bits(loaded.b)).toEqual(bits(original.b));
    expect(loaded.meta).toEqual(original.meta);
    expect(adapterWeightsSha256(loaded)).toBe(weightsSha256);
    const header = JSON.parse(readFileSync(path, 'utf8'));
    expect(header).toMatchObject({
      format: 'bfe-query-adapter',
      dim: 24,
      rank: 4,
      seed: 42,
      epoch: 1,
      weights: { sha256: weightsSha256, dtype: 'float32' },
    });
  });

  it('refuses a corrupted weight byte (SHA-256 mismatch)', () => {
    const text = serializeAdapter(adapter());
    const json = JSON.parse(text);
    const data: string = json.weights.base64;
    const at = 100;
    json.weights.base64 = data.slice(0, at) + (data[at] === 'A' ? 'B' : 'A') + data.slice(at + 1);
    expect(() => parseAdapter(JSON.stringify(json))).toThrow(ArtifactCorruptError);
    expect(() => parseAdapter(JSON.stringify(json))).toThrow(/SHA-256 .* the header says/);
  });

  it('refuses a truncated file, a wrong header, a wrong weight count and stray fields', async () => {
    const text = serializeAdapter(adapter());
    const path = join(root, 'cut.json');
    writeFileSync(path, text.slice(0, text.length / 2));
    await expect(loadAdapter(path)).rejects.toThrow(/cut\.json: not JSON/);
    const json = JSON.parse(text);
    const variants: [unknown, RegExp][] = [
      [{ ...json, format: 'other' }, /not a valid adapter file/],
      [{ ...json, rank: 5 }, /rank or seed disagree/],
      [{ ...json, dim: 25 }, /weight bytes, expected/],
      [{ ...json, epoch: 9 }, /epoch 9 exceeds/],
      [{ ...json, extra: 1 }, /not a valid adapter file/],
      [{ ...json, weights: { ...json.weights, base64: '***' } }, /not a valid adapter file/],
    ];
    for (const [variant, message] of variants) {
      expect(() => parseAdapter(JSON.stringify(variant))).toThrow(message);
    }
  });

  it('refuses non-finite weights even with a matching hash', () => {
    const bad = adapter();
    bad.a[3] = Number.NaN;
    expect(() => parseAdapter(serializeAdapter(bad))).toThrow(/weight 3 is NaN/);
  });
});
