import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { LoadReport, formatPath, validateRecord } from './load-report.js';

describe('LoadReport', () => {
  it('counts repairs, unresolved references and drops per kind, with item details', () => {
    const r = new LoadReport('demo');
    r.repair('evidence-leading-zero', 'q1', "'D30:05' → D30:5");
    r.repair('evidence-leading-zero', 'q2', "'D1:03' → D1:3");
    r.unresolved('evidence-unknown-id', 'q3', 'D10:19');
    r.drop('abstention', 'q4');
    const json = r.toJSON();
    expect(json.repaired).toEqual({ 'evidence-leading-zero': 2 });
    expect(json.unresolved).toEqual({ 'evidence-unknown-id': 1 });
    expect(json.dropped).toEqual({ abstention: 1 });
    expect(json.details.repaired['evidence-leading-zero']?.[1]).toEqual({
      id: 'q2',
      detail: "'D1:03' → D1:3",
    });
    expect(r.repairedCount()).toBe(2);
    expect(r.droppedCount('abstention')).toBe(1);
  });
});

describe('validateRecord', () => {
  const schema = z.object({ id: z.string(), turns: z.array(z.object({ text: z.string() })) });

  it('returns the parsed record when valid', () => {
    const r = new LoadReport('demo');
    expect(
      validateRecord(schema, { id: 'a', turns: [] }, { file: 'f.json', record: 'a' }, r),
    ).toEqual({ id: 'a', turns: [] });
    expect(r.issues).toHaveLength(0);
  });

  it('records the file, the record and the field path instead of throwing', () => {
    const r = new LoadReport('demo');
    const out = validateRecord(
      schema,
      { id: 'a', turns: [{ text: 1 }] },
      { file: 'f.json', record: 'a' },
      r,
    );
    expect(out).toBeUndefined();
    expect(r.issues[0]).toMatchObject({ file: 'f.json', record: 'a', path: 'turns[0].text' });
    expect(r.toJSON().dropped).toEqual({ 'invalid-record': 1 });
  });

  it('formats paths like JavaScript accessors', () => {
    expect(formatPath(['qa', 3, 'evidence', 0])).toBe('qa[3].evidence[0]');
    expect(formatPath([])).toBe('');
  });
});
