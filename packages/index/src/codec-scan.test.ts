import { afterAll, describe, expect, it } from 'vitest';
import { codecTokenStore, CodecExactTokenIndex } from './codec-index.js';
import { codecSimilarityGraph } from './codec-graph.js';
import { decodeTokens, encodeTokens, prepareQuery, trainCodec } from './codecs/codec.js';
import type { CodecName } from './codecs/model.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import { ExactTokenIndex, type TokenHits, type TokenSearchOptions } from './token-index.js';

const DIM = 96;
const CODECS: CodecName[] = ['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4'];
const ort = new OrtSimilarityKernel({ threads: 1 });
afterAll(() => ort.dispose());

/**
 * 60 memories of 20..59 tokens (about 2,400 tokens); memories 3 and 9 repeat memory 0's first
 * tokens, so equal similarities occur and the tie order decides.
 */
function bank(seed: number, dim: number) {
  const random = rng(seed);
  const rows = 60;
  const tokenOffsets = new Int32Array(rows + 1);
  for (let m = 0; m < rows; m++)
    tokenOffsets[m + 1] = tokenOffsets[m]! + 20 + Math.floor(random() * 40);
  const n = tokenOffsets[rows]!;
  const vectors = unitVectors(n, dim, random);
  for (const m of [3, 9]) vectors.copyWithin(tokenOffsets[m]! * dim, 0, 20 * dim);
  const ids = Array.from({ length: rows }, (_, m) => `conv:D${m}`);
  return { vectors, tokenOffsets, ids, n };
}

function same(a: TokenHits, b: TokenHits): void {
  expect(a.k).toBe(b.k);
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.values)).toEqual(Array.from(b.values));
  expect(Array.from(a.memories)).toEqual(Array.from(b.memories));
  expect(Array.from(a.slots)).toEqual(Array.from(b.slots));
}

describe('codec search in onnxruntime', () => {
  const dim = 384;
  const b = bank(11, dim);
  // Every other memory (gaps between runs), and all of them.
  const some = Int32Array.from({ length: 30 }, (_, i) => 2 * i + 1).filter((m) => m !== 9);
  const cases: [string, TokenSearchOptions][] = [
    ['all memories, one chunk', { memories: Int32Array.from({ length: 60 }, (_, m) => m) }],
    [
      'every other memory, chunks of 1,024, best per memory',
      {
        memories: Int32Array.of(0, ...some, 9),
        chunkSize: 1024,
        bestPerMemory: true,
      },
    ],
  ];
  it.each(CODECS.flatMap((c) => cases.map(([label, o]) => [c, label, o] as const)))(
    '%s (%s): the same hits as scoring the decoded codes',
    async (name, _label, options) => {
      const model = trainCodec(name, b.vectors, b.n, dim, { seed: 7 });
      const codes = encodeTokens(model, b.vectors, b.n);
      const side = { model, codes, tokenOffsets: b.tokenOffsets, ids: b.ids };
      const q = unitVectors(24, dim, rng(12));
      q.set(b.vectors.subarray(0, dim), 0); // equals memory 0's first token (and 3's, 9's)
      const fast = new CodecExactTokenIndex(side, ort);
      // Today's path: the kernel over decoded float32 rows.
      const decoded = new ExactTokenIndex(
        { tokens: codecTokenStore(model, codes), tokenOffsets: b.tokenOffsets, ids: b.ids },
        ort,
      );
      const pq = prepareQuery(model, q, 24);
      const [x, y] = [
        await fast.search(q, 24, 64, options),
        await decoded.search(pq, 24, 64, options),
      ];
      same(x, y);
      if (options.bestPerMemory === true) {
        const best = x.best!;
        const ref = y.best!;
        for (let i = 0; i < ref.length; i++) expect(best[i]).toBeCloseTo(ref[i]!, 4);
      }
    },
  );

  it.each(['uint8', 'nibbles', 'float16'] as const)(
    '%s graph: scores equal q·lo + (q⊙step)·c to float32 precision',
    async (element) => {
      const name = element === 'uint8' ? 'sq8' : element === 'nibbles' ? 'sq4' : 'fp16';
      const small = bank(13, DIM);
      const model = trainCodec(name, small.vectors, small.n, DIM);
      const codes = encodeTokens(model, small.vectors, small.n);
      const x = decodeTokens(model, codes, 0, small.n);
      const q = unitVectors(1, DIM, rng(14));
      const index = new CodecExactTokenIndex(
        { model, codes, tokenOffsets: small.tokenOffsets },
        ort,
      );
      const hits = await index.search(q, 1, 5, { memories: Int32Array.of(1, 2) });
      const every = Array.from(
        { length: small.tokenOffsets[3]! - small.tokenOffsets[1]! },
        (_, i) => {
          const t = small.tokenOffsets[1]! + i;
          let s = 0;
          for (let d = 0; d < DIM; d++) s += x[t * DIM + d]! * q[d]!;
          return { t, s };
        },
      ).sort((a, c) => c.s - a.s);
      expect(Array.from(hits.tokens)).toEqual(every.slice(0, 5).map((e) => e.t));
      expect(codecSimilarityGraph({ element, width: DIM, scores: false }).length).toBeGreaterThan(
        0,
      );
    },
  );
});
