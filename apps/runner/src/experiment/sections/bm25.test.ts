import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { DATASET_NAMES, datasetLanguage } from '@bfe/datasets';
import { resolveBm25Options } from '@bfe/scorer';
import { bm25ConfigSchema } from './bm25.js';
import { parseExperiment } from '../config.js';

describe('scorer.bm25', () => {
  it('is optional, and absent from a parsed experiment that does not write it', () => {
    const e = parseExperiment({ name: 'x', dataset: { name: 'locomo' } });
    expect(e.scorer).not.toHaveProperty('bm25');
    const set = parseExperiment({
      name: 'x',
      dataset: { name: 'locomo' },
      scorer: { bm25: { idf: 'corpus' } },
    });
    expect(set.scorer.bm25).toEqual({ idf: 'corpus' });
  });

  it('refuses an unknown language, IDF or field', () => {
    for (const bm25 of [{ language: 'french' }, { idf: 'global' }, { stem: 'english' }]) {
      expect(() =>
        parseExperiment({ name: 'x', dataset: { name: 'locomo' }, scorer: { bm25 } }),
      ).toThrow(ConfigError);
      expect(bm25ConfigSchema.safeParse(bm25).success).toBe(false);
    }
  });
});

describe('resolveBm25Options: the predeclared defaults', () => {
  it('English stop words and stems for the registered (English) datasets, none for lmeb:', () => {
    expect(DATASET_NAMES.length).toBeGreaterThan(0);
    for (const name of DATASET_NAMES) {
      expect(datasetLanguage(name), name).toBe('english');
      expect(resolveBm25Options(undefined, datasetLanguage(name))).toEqual({
        language: 'english',
        idf: 'candidates',
      });
    }
    expect(datasetLanguage('lmeb:./some/folder')).toBe('undeclared');
    expect(resolveBm25Options(undefined, datasetLanguage('lmeb:./x'))).toEqual({
      language: 'none',
      idf: 'candidates',
    });
    expect(() => datasetLanguage('no-such-dataset')).toThrow(/no-such-dataset/);
  });

  it('the experiment’s choice wins over the dataset’s, field by field', () => {
    expect(resolveBm25Options({ language: 'none' }, 'english')).toEqual({
      language: 'none',
      idf: 'candidates',
    });
    expect(resolveBm25Options({ language: 'english', idf: 'corpus' }, 'undeclared')).toEqual({
      language: 'english',
      idf: 'corpus',
    });
    expect(resolveBm25Options({ idf: 'corpus' }, 'english')).toEqual({
      language: 'english',
      idf: 'corpus',
    });
  });
});
