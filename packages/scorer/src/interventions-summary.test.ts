import { describe, expect, it } from 'vitest';
import { median, summarizeInterventions } from './interventions-summary.js';

describe('summarizeInterventions', () => {
  const records = [
    { subtask: 'temporal', before: 1, after: [1, 12] },
    { subtask: 'temporal', before: 3, after: [5, 9] },
    { subtask: 'multi-hop', before: 2, after: [40, 41] },
    { subtask: 'temporal', before: 11, after: [30, 30] },
  ];

  it('gives medians, the median shift and the share that leaves the top 10, per subtask and all', () => {
    const rows = summarizeInterventions(records, [1, 2], ['multi-hop', 'temporal', 'open-domain']);
    expect(rows.map((r) => [r.subtask, r.removeTop, r.queries])).toEqual([
      ['multi-hop', 1, 1],
      ['multi-hop', 2, 1],
      ['temporal', 1, 3],
      ['temporal', 2, 3],
      ['all', 1, 4],
      ['all', 2, 4],
    ]);
    const t2 = rows[3]!;
    // before 1, 3, 11 → 3; after 12, 9, 30 → 12; shifts 11, 6, 19 → 11.
    expect([t2.medianBefore, t2.medianAfter, t2.medianShift]).toEqual([3, 12, 11]);
    // Only the first query was in the top 10 and left it (11 was never in).
    expect([t2.inTopBefore, t2.leftTop]).toEqual([2, 1]);
    expect(t2.leftTopShare).toBeCloseTo(1 / 3, 12);
    const all1 = rows[4]!;
    // before 1, 2, 3, 11 → 2.5; after 1, 5, 40, 30 → 17.5; shifts 0, 2, 38, 19 → 10.5.
    expect([all1.medianBefore, all1.medianAfter, all1.medianShift]).toEqual([2.5, 17.5, 10.5]);
    expect(all1.leftTop).toBe(1);
  });

  it('does not depend on the records’ order', () => {
    const a = summarizeInterventions(records, [1, 2], ['temporal', 'multi-hop']);
    const b = summarizeInterventions([...records].reverse(), [1, 2], ['temporal', 'multi-hop']);
    expect(b).toEqual(a);
  });

  it('refuses a record with the wrong number of ranks', () => {
    expect(() => summarizeInterventions(records, [1], ['temporal'])).toThrow(/expected 1/);
    expect(median([])).toBeNaN();
    expect(median([4, 1, 3])).toBe(3);
  });
});
