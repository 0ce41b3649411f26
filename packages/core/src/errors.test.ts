import { describe, expect, it } from 'vitest';
import { BfeError, HashMismatchError, SplitError, UnknownDatasetError } from './errors.js';

describe('errors', () => {
  it('carry a stable code, their class name and a suggestion', () => {
    const e = new SplitError('one component', { suggestion: 'use query-disjoint-shared-bank' });
    expect(e).toBeInstanceOf(BfeError);
    expect(e.code).toBe('SPLIT_IMPOSSIBLE');
    expect(e.name).toBe('SplitError');
    expect(e.suggestion).toMatch(/shared-bank/);
  });

  it('name the file and both hashes on a mismatch', () => {
    const e = new HashMismatchError('locomo10.json', 'aa', 'bb');
    expect(e.message).toContain('locomo10.json');
    expect(e.message).toContain('aa');
    expect(e.message).toContain('bb');
  });

  it('list the known datasets for an unknown one', () => {
    expect(new UnknownDatasetError('locom', ['locomo', 'covidqa']).suggestion).toContain(
      'locomo, covidqa',
    );
  });
});
