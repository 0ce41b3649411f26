import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';
import { EncoderSession, sessionOptions, type ExecutionProvider } from './onnx-session.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

describe('EncoderSession (tiny graphs from tools/reference/make_tiny_onnx.py)', () => {
  it('runs a padded batch and returns [batch, seq, dim] states', async () => {
    const s = await EncoderSession.open(fixture('tiny-encoder.onnx'), { threads: 1 });
    try {
      expect(s.inputNames).toEqual(['input_ids', 'attention_mask']);
      const ids = BigInt64Array.from([3n, 5n, 0n, 7n, 0n, 0n]);
      const mask = BigInt64Array.from([1n, 1n, 0n, 1n, 0n, 0n]);
      const { states, dim } = await s.run(ids, mask, 2, 3);
      expect(dim).toBe(4);
      // state = id * [1, -1, 0.5, 2] + mask * [0, 0, 1, 0]
      expect(Array.from(states.subarray(0, 8))).toEqual([3, -3, 2.5, 6, 5, -5, 3.5, 10]);
      expect(Array.from(states.subarray(12, 16))).toEqual([7, -7, 4.5, 14]);
    } finally {
      await s.dispose();
    }
  });

  it('refuses a graph without last_hidden_state, naming what it found', async () => {
    const error = await EncoderSession.open(fixture('no-hidden-state.onnx')).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ArtifactCorruptError);
    expect((error as Error).message).toContain('outputs [logits]');
  });

  it('refuses a file that is not an ONNX graph', async () => {
    await expect(EncoderSession.open(fixture('tiny-tokenizer.json'))).rejects.toThrow(
      ArtifactCorruptError,
    );
    await expect(EncoderSession.open(fixture('missing.onnx'))).rejects.toThrow(
      ArtifactCorruptError,
    );
  });

  it('refuses an unknown execution provider', async () => {
    await expect(
      EncoderSession.open(fixture('tiny-encoder.onnx'), {
        executionProvider: 'cuda' as ExecutionProvider,
      }),
    ).rejects.toThrow(ConfigError);
  });

  it('checks feed shapes before running', async () => {
    const s = await EncoderSession.open(fixture('tiny-encoder.onnx'));
    try {
      await expect(s.run(new BigInt64Array(5), new BigInt64Array(6), 2, 3)).rejects.toThrow(
        /do not match/,
      );
    } finally {
      await s.dispose();
    }
  });

  it('gives the same states with a preallocated output buffer, batch after batch, as a view it reuses', async () => {
    const plain = await EncoderSession.open(fixture('tiny-encoder.onnx'), { threads: 1 });
    const pre = await EncoderSession.open(fixture('tiny-encoder.onnx'), {
      threads: 1,
      preallocate: true,
    });
    try {
      const shapes: Array<[number, number]> = [
        [2, 3],
        [4, 5],
        [1, 2],
        [3, 4],
        [2, 3],
      ];
      const views: Float32Array[] = [];
      for (const [batch, seq] of shapes) {
        const ids = BigInt64Array.from({ length: batch * seq }, (_, i) => BigInt((i * 7) % 11));
        const mask = BigInt64Array.from(ids, (v) => (v === 0n ? 0n : 1n));
        const a = await plain.run(ids, mask, batch, seq);
        const b = await pre.run(ids, mask, batch, seq);
        expect(b.dim).toBe(a.dim);
        expect(b.states.length).toBe(batch * seq * a.dim);
        expect(Array.from(b.states)).toEqual(Array.from(a.states));
        views.push(b.states);
      }
      // After the first run (which learns the hidden size) every run writes into one buffer,
      // sized by the largest batch so far (the second here).
      expect(new Set(views.slice(1).map((v) => v.buffer)).size).toBe(1);
    } finally {
      await plain.dispose();
      await pre.dispose();
    }
  });

  it('takes the thread, optimisation-level and spinning options, and saves the optimised graph it loads back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bfe-session-'));
    try {
      const ids = BigInt64Array.from([3n, 5n, 0n, 7n, 0n, 0n]);
      const mask = BigInt64Array.from([1n, 1n, 0n, 1n, 0n, 0n]);
      const ref = await EncoderSession.open(fixture('tiny-encoder.onnx'), { threads: 1 });
      const want = Array.from((await ref.run(ids, mask, 2, 3)).states);
      await ref.dispose();
      const saved = join(dir, 'optimised.onnx');
      const variants = [
        { interOpThreads: 2 },
        { graphOptimizationLevel: 'disabled' as const },
        { graphOptimizationLevel: 'basic' as const, spinning: false },
        { graphOptimizationLevel: 'extended' as const, spinning: true },
        { optimizedModelPath: saved },
      ];
      for (const options of variants) {
        const s = await EncoderSession.open(fixture('tiny-encoder.onnx'), {
          threads: 1,
          ...options,
        });
        expect(Array.from((await s.run(ids, mask, 2, 3)).states)).toEqual(want);
        await s.dispose();
      }
      expect(existsSync(saved)).toBe(true);
      const reread = await EncoderSession.open(saved, { graphOptimizationLevel: 'disabled' });
      expect(Array.from((await reread.run(ids, mask, 2, 3)).states)).toEqual(want);
      await reread.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('maps the options onto onnxruntime: no spinning unless asked, parallel executor above 1 inter-op thread', () => {
    const spin = (o: ReturnType<typeof sessionOptions>) =>
      (o.extra as { session: { intra_op: { allow_spinning: string } } }).session.intra_op
        .allow_spinning;
    const plain = sessionOptions('cpu', {});
    expect(spin(plain)).toBe('0');
    expect(plain.graphOptimizationLevel).toBe('all');
    expect(plain.executionMode).toBeUndefined();
    expect(plain.intraOpNumThreads).toBeUndefined();
    expect(spin(sessionOptions('cpu', { spinning: true }))).toBe('1');
    const tuned = sessionOptions('cpu', {
      threads: 2,
      interOpThreads: 2,
      graphOptimizationLevel: 'basic',
      optimizedModelPath: '/tmp/x.onnx',
    });
    expect(tuned).toMatchObject({
      intraOpNumThreads: 2,
      interOpNumThreads: 2,
      executionMode: 'parallel',
      graphOptimizationLevel: 'basic',
      optimizedModelFilePath: '/tmp/x.onnx',
    });
    expect(sessionOptions('cpu', { interOpThreads: 1 }).executionMode).toBeUndefined();
  });
});
