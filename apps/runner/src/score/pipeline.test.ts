import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, DataError, benchmarkHash } from '@bfe/core';
import type { Benchmark, Query } from '@bfe/core';
import type { OpenedBank } from '@bfe/encoder';
import { checkBankMatches, groupByCandidates } from './pipeline.js';
import { parseEvalCliOptions, parseScoreCliOptions } from './options.js';

const query = (id: string, category: string, rest: Partial<Query>): Query =>
  ({ id, text: id, category, meta: {}, ...rest }) as Query;

const benchmark: Benchmark = {
  name: 'toy',
  options: {},
  subtasks: ['1', '2'],
  sources: [],
  memories: [
    { id: 'a:1', bankId: 'a', text: 'x', meta: {} },
    { id: 'a:2', bankId: 'a', text: 'y', meta: {} },
    { id: 'b:1', bankId: 'b', text: 'z', meta: {} },
  ],
  queries: [
    query('q2', '2', { candidateBankIds: ['a'] }),
    // File order q3 before q1: ranking and evaluation order them by id.
    query('q3', '1', { candidateIds: ['a:2', 'a:1', 'a:2'] }),
    query('q1', '1', { candidateBankIds: ['b'] }),
    query('q4', '2', { candidateBankIds: ['a', 'b'] }),
  ],
};

/** The fields of an opened bank that grouping and the hash check read. */
const bank = {
  manifest: { dataset: 'toy', benchmarkHash: benchmarkHash(benchmark) },
  memories: { ids: ['a:1', 'a:2', 'b:1'], bankIds: ['a', 'a', 'b'] },
} as unknown as OpenedBank;

describe('groupByCandidates', () => {
  it('groups queries with identical candidate rows, subtask by subtask in declared order, by id within', () => {
    const groups = groupByCandidates(bank, benchmark, undefined);
    // Rows come in the memory ids' tie order (tested in @bfe/scorer); sorted here.
    const rows = (g: (typeof groups)[number]) => [...g.rows].sort((x, y) => x - y);
    expect(groups.map((g) => [rows(g), g.queries.map((q) => q.id)])).toEqual([
      [[2], ['q1']],
      [
        [0, 1],
        ['q3', 'q2'],
      ],
      [[0, 1, 2], ['q4']],
    ]);
    expect([...groups[1]!.ids].sort()).toEqual(['a:1', 'a:2']);
  });

  it('keeps only the selected queries', () => {
    const groups = groupByCandidates(bank, benchmark, new Set(['q2', 'q4']));
    expect(groups.flatMap((g) => g.queries.map((q) => q.id))).toEqual(['q2', 'q4']);
  });

  // Resolving candidates (unknown ids, empty banks) is @bfe/scorer's, tested there.
  it('refuses a bank whose memories have no bank ids', () => {
    const noBankIds = {
      ...bank,
      memories: { ...bank.memories, bankIds: undefined },
    } as unknown as OpenedBank;
    expect(() => groupByCandidates(noBankIds, benchmark, undefined)).toThrow(
      new ArtifactCorruptError('memories.arrow has no bank_id'),
    );
  });
});

describe('checkBankMatches', () => {
  it('accepts the benchmark the bank was encoded from', () => {
    expect(() => checkBankMatches(bank, benchmark, '/b')).not.toThrow();
  });

  it('refuses another benchmark with a DataError naming both hashes', () => {
    const other = { ...benchmark, options: { granularity: 'session' } };
    expect(() => checkBankMatches(bank, other, '/b')).toThrow(DataError);
    expect(() => checkBankMatches(bank, other, '/b')).toThrow(/encoded from 'toy'.*benchmark hash/);
  });
});

describe('score and eval options', () => {
  const defaults = {
    bank: 'b',
    dataset: 'd',
    splitPart: 'test',
    k: '64',
    alpha: '0.5',
    ks: '10,1,5,5',
    kSweep: '128,16',
    resamples: '10000',
    seed: '42',
    executionProvider: 'cpu',
  };

  it('parses lists into sorted unique integers, and none into an empty sweep', () => {
    const o = parseScoreCliOptions(defaults);
    expect(o.ks).toEqual([1, 5, 10]);
    expect(o.kSweep).toEqual([16, 128]);
    expect(parseScoreCliOptions({ ...defaults, kSweep: 'none' }).kSweep).toEqual([]);
  });

  it('refuses ks without 10, a bad α, a bad list and a bad split part', () => {
    expect(() => parseScoreCliOptions({ ...defaults, ks: '1,5' })).toThrow(/k = 10/);
    expect(() => parseScoreCliOptions({ ...defaults, alpha: '1.5' })).toThrow(/alpha/);
    expect(() => parseScoreCliOptions({ ...defaults, kSweep: '16,x' })).toThrow(/kSweep/);
    expect(() => parseScoreCliOptions({ ...defaults, splitPart: 'dev' })).toThrow(/splitPart/);
    expect(() => parseScoreCliOptions({ ...defaults, executionProvider: 'cuda' })).toThrow(
      /executionProvider/,
    );
  });

  it('parses --hybrid into weights on the simplex, and refuses bad ones', () => {
    expect(parseScoreCliOptions(defaults).hybrid).toBeUndefined();
    expect(parseScoreCliOptions({ ...defaults, hybrid: '1, 1,2' }).hybrid).toEqual({
      pooled: 0.25,
      sparse: 0.25,
      bm25: 0.5,
    });
    expect(() => parseScoreCliOptions({ ...defaults, hybrid: '0,0,0' })).toThrow(/not all 0/);
    expect(() => parseScoreCliOptions({ ...defaults, hybrid: '1,1' })).toThrow(/three weights/);
    expect(() => parseScoreCliOptions({ ...defaults, hybrid: '1,-1,1' })).toThrow(/three weights/);
  });

  it('parses eval options', () => {
    expect(parseEvalCliOptions({ perQuery: 'p', base: 'pooled', subtasks: '2, 1' })).toEqual({
      perQuery: 'p',
      base: 'pooled',
      subtasks: ['2', '1'],
      transitions: [],
    });
  });

  it('parses --transitions, repeated or as a;b, and refuses anything but two systems', () => {
    const parse = (transitions: string[]) =>
      parseEvalCliOptions({ perQuery: 'p', base: 'pooled', transitions }).transitions;
    expect(parse(['pooled,sparse-fusion', ' pooled , adapted;sparse-fusion,adapted;'])).toEqual([
      ['pooled', 'sparse-fusion'],
      ['pooled', 'adapted'],
      ['sparse-fusion', 'adapted'],
    ]);
    expect(parseScoreCliOptions({ ...defaults, transitions: ['a,b', 'a,b'] }).transitions).toEqual([
      ['a', 'b'],
    ]);
    for (const bad of ['pooled', 'a,b,c', 'a,a', ',b']) {
      expect(() => parse([bad])).toThrow(/transitions/);
    }
  });
});
