import { describe, expect, it } from 'vitest';
import { ConfigError, DataError, memorySchema, querySchema, type SourceFile } from '@bfe/core';
import { covidQaOptionsSchema, parseCovidQa } from './covidqa.js';

const source: SourceFile = { name: 'covid-mini.json', sha256: 'a'.repeat(64) };

// Pieces: "Title line" | "" | "First paragraph about ACE2." | "Second …" | "  " | "Third."
const CONTEXT =
  'Title line\n\nFirst paragraph about ACE2.\nSecond paragraph, about masks and masks.\n  \nThird.';
const at = (text: string): number => CONTEXT.indexOf(text);

function qa(id: string | number, question: string, answers: unknown[], extra = {}) {
  return { id, question, answers, is_impossible: false, ...extra };
}

const RAW = {
  data: [
    {
      title: 'Mini',
      paragraphs: [
        {
          document_id: 'A1',
          context: CONTEXT,
          qas: [
            qa('q1', 'Which receptor?', [{ text: 'ACE2', answer_start: at('ACE2') }]),
            qa('q2', 'Last word?', [{ text: 'Third.', answer_start: 0 }]),
            qa('q3', 'What about masks?', [{ text: 'masks', answer_start: 0 }]),
            qa('q4', 'Across lines?', [{ text: 'ACE2.\nSecond', answer_start: at('ACE2.') }]),
            qa('q5', 'From the newline?', [{ text: '\nSecond', answer_start: at('\nSecond') }]),
            qa('q6', 'Nowhere?', [{ text: 'zzz', answer_start: 500 }]),
            qa('q7', '   ', [{ text: 'ACE2', answer_start: at('ACE2') }]),
            qa('q1', 'Again q1?', [{ text: 'ACE2', answer_start: at('ACE2') }]),
            qa('q9', 'Impossible?', [], { is_impossible: true }),
            qa('q10', 'No start?', [{ text: 'x' }]),
            qa(11, 'Numeric id?', [
              { text: 'First', answer_start: at('First') },
              { text: 'Title', answer_start: 0 },
            ]),
          ],
        },
      ],
    },
    {
      paragraphs: [
        {
          context: 'Only one line.',
          qas: [qa('q20', 'How many?', [{ text: 'one', answer_start: 5 }])],
        },
      ],
    },
    {
      paragraphs: [
        {
          document_id: 'A1',
          context: 'Same id again.',
          qas: [qa('q30', 'Q?', [{ text: 'id', answer_start: 5 }])],
        },
      ],
    },
    { paragraphs: [{ document_id: 'C1', qas: [] }] },
    {
      paragraphs: [
        { document_id: 'B1', context: 'Part one.', qas: [] },
        {
          document_id: 'B2',
          context: 'Part two.',
          qas: [qa('q50', 'Two?', [{ text: 'two', answer_start: 5 }])],
        },
      ],
    },
    'oops',
  ],
};

describe('parseCovidQa', () => {
  const { benchmark, labels, report } = parseCovidQa(RAW, {}, source);
  const json = report.toJSON();

  it('makes one memory per non-empty line, with offsets and article banks', () => {
    expect(benchmark.memories.map((m) => [m.id, m.bankId, m.text])).toEqual([
      ['A1:p0', 'A1', 'Title line'],
      ['A1:p1', 'A1', 'First paragraph about ACE2.'],
      ['A1:p2', 'A1', 'Second paragraph, about masks and masks.'],
      ['A1:p3', 'A1', 'Third.'],
      ['article-1:p0', 'article-1', 'Only one line.'],
      ['A1~2:p0', 'A1~2', 'Same id again.'],
      ['B1:p0', 'B1', 'Part one.'],
      ['B1:p1', 'B1', 'Part two.'],
    ]);
    expect(benchmark.memories[2]?.meta).toEqual({
      article: 'A1',
      context: 0,
      start: at('Second'),
      end: at('\n  \n'),
    });
    expect(benchmark.memories[7]?.meta).toEqual({ article: 'B1', context: 1, start: 0, end: 9 });
    for (const m of benchmark.memories) expect(memorySchema.safeParse(m).success).toBe(true);
    for (const m of benchmark.memories.filter((m) => m.bankId === 'A1')) {
      expect(CONTEXT.slice(Number(m.meta.start), Number(m.meta.end))).toBe(m.text);
    }
    expect(json.dropped['empty-paragraph']).toBe(2);
  });

  it('gives each query its article as the only candidate bank', () => {
    expect(benchmark.queries.map((q) => [q.id, q.candidateBankIds])).toEqual([
      ['q1', ['A1']],
      ['q2', ['A1']],
      ['q3', ['A1']],
      ['q4', ['A1']],
      ['q5', ['A1']],
      ['11', ['A1']],
      ['q20', ['article-1']],
      ['q30', ['A1~2']],
      ['q50', ['B1']],
    ]);
    for (const q of benchmark.queries) {
      expect(querySchema.safeParse(q).success).toBe(true);
      expect(q.category).toBe('covidqa');
      expect(q.meta).toEqual({ article: q.candidateBankIds?.[0] });
    }
    expect(benchmark.subtasks).toEqual(['covidqa']);
    expect(benchmark.sources).toEqual([source]);
    expect(benchmark.options).toEqual({ paragraphs: 'line' });
  });

  it('labels the paragraph holding each answer start', () => {
    expect(labels.toRows()).toEqual([
      ['q1', 'A1:p1', 1],
      ['q2', 'A1:p3', 1], // relocated: 'Third.' occurs once
      ['q3', 'A1:p0', 1], // 'masks' occurs twice: the given offset stands
      ['q4', 'A1:p1', 1], // spans into p2; labelled where it starts
      ['q5', 'A1:p2', 1], // starts on the newline before p2
      ['11', 'A1:p1', 1],
      ['11', 'A1:p0', 1],
      ['q20', 'article-1:p0', 1],
      ['q30', 'A1~2:p0', 1],
      ['q50', 'B1:p1', 1],
    ]);
  });

  it('reports repairs, unresolved references and drops by kind', () => {
    expect(json.repaired).toEqual({
      'answer-offset-mismatch': 1,
      'answer-start-between-paragraphs': 1,
      'duplicate-article-id': 1,
    });
    expect(json.unresolved).toEqual({
      'answer-offset-mismatch': 2,
      'answer-spans-paragraphs': 1,
      'answer-outside-paragraphs': 1,
      'conflicting-document-id': 1,
    });
    expect(json.dropped).toEqual({
      'empty-paragraph': 2,
      'no-resolvable-evidence': 2,
      'empty-text': 1,
      'duplicate-query-id': 1,
      'invalid-record': 3,
    });
    expect(json.details.repaired['answer-offset-mismatch']).toEqual([
      { id: 'q2', detail: `answer_start 0 → ${at('Third.')}` },
    ]);
    expect(json.details.dropped['no-resolvable-evidence']?.map((d) => [d.id, d.detail])).toEqual([
      ['q6', 'no answer lies in a kept paragraph'],
      ['q9', 'is_impossible'],
    ]);
  });

  it('names the record and field path of each invalid record', () => {
    expect(report.issues.map((i) => [i.file, i.record, i.path])).toEqual([
      ['covid-mini.json', 'data[0].paragraphs[0].qas[9]', 'answers[0].answer_start'],
      ['covid-mini.json', 'data[3].paragraphs[0]', 'context'],
      ['covid-mini.json', 'data[5]', ''],
    ]);
  });

  it('cuts at blank lines only under paragraphs: blank-line', () => {
    const out = parseCovidQa(RAW, { paragraphs: 'blank-line' }, source);
    expect(out.benchmark.memories.filter((m) => m.bankId === 'A1').map((m) => m.text)).toEqual([
      'Title line',
      'First paragraph about ACE2.\nSecond paragraph, about masks and masks.',
      'Third.',
    ]);
    expect(out.labels.relevant('q4')).toEqual(new Map([['A1:p1', 1]]));
    expect(out.report.toJSON().unresolved['answer-spans-paragraphs']).toBeUndefined();
    expect(out.benchmark.options).toEqual({ paragraphs: 'blank-line' });
  });

  it('throws a DataError for a file that is not SQuAD-shaped', () => {
    expect(() => parseCovidQa({ version: 1 }, {}, source)).toThrow(DataError);
    expect(() => parseCovidQa([], {}, source)).toThrow(/covid-mini\.json: not a SQuAD-format file/);
  });

  it('validates its options', () => {
    expect(() => parseCovidQa(RAW, { paragraphs: 'word' } as never, source)).toThrow(ConfigError);
    expect(covidQaOptionsSchema.parse({})).toEqual({ paragraphs: 'line' });
  });
});
