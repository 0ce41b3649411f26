import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { SparseScorer } from '@bfe/scorer';
import { randomQuery, randomView } from '../testing/random-view.js';
import {
  SHIPPED_CALIBRATIONS,
  parseRelevanceCalibration,
  relevance,
  shippedCalibrations,
  type RelevanceCalibration,
} from './relevance.js';
import { searchView } from './search.js';
import { searchResultFromJson, searchResultJsonSchema, searchResultToJson } from './wire.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

const DIM = 12;
const calibration: RelevanceCalibration = {
  schemaVersion: 1,
  name: 'test/v1',
  model: { name: 'test', sha256: 'test-model' },
  maxLength: 128,
  features: ['pooled', 'sparse'],
  intercept: -3,
  weights: [2.5, 4],
  threshold: 0.3,
  fitted: {},
};

describe('relevance', () => {
  it('is the logistic function of the pooled and sparse scores', () => {
    const z = -3 + 2.5 * 0.4 + 4 * 0.7;
    expect(relevance(calibration, 0.4, 0.7)).toBeCloseTo(1 / (1 + Math.exp(-z)), 12);
  });

  it('ships every listed calibration file, parsed, for MiniLM', () => {
    const shipped = shippedCalibrations();
    expect(shipped).toHaveLength(SHIPPED_CALIBRATIONS.length);
    for (const file of SHIPPED_CALIBRATIONS) {
      const url = new URL(`../../calibration/${file}`, import.meta.url);
      expect(() => parseRelevanceCalibration(JSON.parse(readFileSync(url, 'utf8')))).not.toThrow();
    }
    expect(shipped[0]!.model.name).toBe('all-minilm-l6-v2');
    expect(shipped[0]!.threshold).toBeGreaterThan(0);
  });

  it('refuses a calibration file with a missing weight', () => {
    expect(() => parseRelevanceCalibration({ ...calibration, weights: [1] })).toThrow(ConfigError);
  });
});

describe('searchView with a relevance calibration', () => {
  const view = randomView(7, { rows: 40, maxTokens: 8, dim: DIM });
  const query = randomQuery(8, 5, DIM);
  const all = { k: 40, explain: false, calibration, queryText: 'memory 3' } as const;

  it("gives each result the calibration's relevance of its pooled and tail-floor scores", async () => {
    for (const system of ['sparse-fusion', 'pooled', 'hybrid'] as const) {
      const tail = await searchView(view, query, { ...all, system: 'sparse-fusion' }, scorer);
      const sparseOf = new Map(tail.map((r) => [r.id, r.sparse]));
      const results = await searchView(view, query, { ...all, system }, scorer);
      expect(results).toHaveLength(40);
      for (const r of results) {
        expect(r.relevance).toBeCloseTo(relevance(calibration, r.pooled, sparseOf.get(r.id)!), 12);
      }
    }
  });

  it('minScore keeps, in rank order, up to k results at or above it', async () => {
    const ranked = await searchView(view, query, all, scorer);
    const values = ranked.map((r) => r.relevance!).sort((a, b) => a - b);
    const minScore = values[25]!; // some pass, some do not
    for (const k of [3, 40]) {
      const kept = await searchView(view, query, { ...all, k, minScore }, scorer);
      const expected = ranked.filter((r) => r.relevance! >= minScore).slice(0, k);
      expect(kept.map((r) => r.id)).toEqual(expected.map((r) => r.id));
      expect(kept.map((r) => r.rank)).toEqual(expected.map((_, i) => i + 1));
    }
    expect(await searchView(view, query, { ...all, minScore: 1 }, scorer)).toEqual([]);
  });

  it('carries relevance through the wire format', async () => {
    const [top] = await searchView(view, query, { ...all, k: 1, explain: true }, scorer);
    const json = searchResultJsonSchema.parse(JSON.parse(JSON.stringify(searchResultToJson(top!))));
    expect(searchResultFromJson(json)).toEqual(top);
    expect(json.relevance).toBe(top!.relevance);
  });

  it('without a calibration for the encoder: no relevance, and minScore refused', async () => {
    const plain = await searchView(view, query, { k: 3 }, scorer);
    expect(plain.every((r) => r.relevance === undefined)).toBe(true);
    await expect(searchView(view, query, { k: 3, minScore: 0.5 }, scorer)).rejects.toThrow(
      /minScore: no relevance calibration/,
    );
    const other = { ...calibration, model: { name: 'x', sha256: 'another-model' } };
    await expect(searchView(view, query, { k: 3, calibration: other }, scorer)).rejects.toThrow(
      ConfigError,
    );
  });
});
