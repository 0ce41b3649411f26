import { describe, expect, it } from 'vitest';
import { fitAndEvaluate, type CalibrationParts } from './evaluate.js';
import type { QueryScores } from './features.js';

/**
 * A query of 10 candidates: noise scores, and for an answerable query one relevant candidate
 * scoring `lift` higher on both branches (an abstention query has none).
 */
function query(id: string, answerable: boolean, lift: number, seed: number): QueryScores {
  const noise = (i: number): number => ((Math.sin(seed * 97 + i * 13) + 1) / 2) * 0.2;
  const pooled = Array.from({ length: 10 }, (_, i) => 0.2 + noise(i));
  const sparse = Array.from({ length: 10 }, (_, i) => 0.3 + noise(i + 50));
  const relevant = pooled.map(() => 0);
  if (answerable) {
    pooled[0]! += lift;
    sparse[0]! += lift;
    relevant[0] = 1;
  }
  return {
    id,
    category: undefined,
    pooled,
    sparse,
    fused: pooled.map((p, i) => p + sparse[i]!),
    relevant,
  };
}

function data(testLift = 0.4) {
  const answerable: QueryScores[] = [];
  const abstention: QueryScores[] = [];
  const parts = {
    train: new Set<string>(),
    validation: new Set<string>(),
    test: new Set<string>(),
  };
  const partOf = (i: number) =>
    i % 4 < 2 ? parts.train : i % 4 === 2 ? parts.validation : parts.test;
  for (let i = 0; i < 40; i++) {
    const lift = partOf(i) === parts.test ? testLift : 0.4;
    answerable.push(query(`a${i}`, true, lift, i));
    partOf(i).add(`a${i}`);
  }
  for (let i = 0; i < 12; i++) {
    abstention.push(query(`q${i}_abs`, false, 0, 100 + i));
    partOf(i).add(`q${i}_abs`);
  }
  return { answerable, abstention, parts: parts as CalibrationParts };
}

describe('fitAndEvaluate', () => {
  it('separates abstention questions perfectly when the relevant memory stands out', () => {
    const { answerable, abstention, parts } = data();
    const o = fitAndEvaluate(answerable, abstention, parts, 1e-3);
    expect(o.weights[0]).toBeGreaterThan(0);
    expect(o.weights[1]).toBeGreaterThan(0);
    expect(o.trainPairs).toBe(20 * 10);
    expect(o.trainRelevant).toBe(20);
    expect(o.testSeparation.relevance.auroc).toBe(1);
    expect(o.test).toMatchObject({ precision: 1, recall: 1, answerableEmptied: 0, answerable: 10 });
    expect(o.testSeparation.relevance).toMatchObject({ answerable: 10, abstention: 3 });
    expect(o.testPairs.pairs).toBe(100);
  });

  it('reads test labels and scores only for the test figures', () => {
    const a = data();
    const b = data(0.01); // test questions' relevant memories now barely stand out
    const oa = fitAndEvaluate(a.answerable, a.abstention, a.parts, 1e-3);
    const ob = fitAndEvaluate(b.answerable, b.abstention, b.parts, 1e-3);
    expect(ob.intercept).toBe(oa.intercept);
    expect(ob.weights).toEqual(oa.weights);
    expect(ob.validation).toEqual(oa.validation);
    expect(ob.testSeparation.relevance.auroc).toBeLessThan(1);
  });

  it('refuses a part without abstention questions', () => {
    const { answerable, abstention, parts } = data();
    const test = new Set([...parts.test].filter((id) => !id.endsWith('_abs')));
    expect(() => fitAndEvaluate(answerable, abstention, { ...parts, test }, 1e-3)).toThrow(
      /lacks answerable or abstention/,
    );
  });
});
