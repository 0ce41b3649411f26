import { describe, expect, it } from 'vitest';
import { terminalTable, terminalTableLines } from './text-table.js';

describe('terminalTable', () => {
  const table = {
    head: ['system', 'R@10'],
    align: ['left', 'right'] as const,
    rows: [
      ['pooled', '0.4213'],
      ['sparse-fusion', '0.62'],
    ],
  };

  it('aligns plain columns two spaces apart under a dashed rule', () => {
    expect(terminalTable(table)).toBe(
      [
        'system           R@10',
        '-------------  ------',
        'pooled         0.4213',
        'sparse-fusion    0.62',
      ].join('\n'),
    );
  });

  it('draws Markdown with right-aligned rules', () => {
    expect(terminalTableLines({ ...table, style: 'markdown' })).toEqual([
      '| system        |   R@10 |',
      '| ------------- | -----: |',
      '| pooled        | 0.4213 |',
      '| sparse-fusion |   0.62 |',
    ]);
  });

  it('headless: only the aligned rows, widths from the rows', () => {
    expect(
      terminalTableLines({
        head: [],
        rows: [
          ['a', 'bb'],
          ['ccc', 'd'],
        ],
        headless: true,
      }),
    ).toEqual(['a    bb', 'ccc  d']);
  });
});
