import { describe, expect, it } from 'vitest';
import { DataError } from '@bfe/core';
import type { LoadedDataset } from '@bfe/core';
import { locomoOptionsSchema, parseLocomo, type LocomoOptions } from './locomo.js';

const source = { name: 'locomo-test.json', sha256: 'a'.repeat(64) };

function turn(dia: string, speaker: string, text: string, extra: Record<string, unknown> = {}) {
  return { speaker, dia_id: dia, text, ...extra };
}

/** A two-session conversation in LoCoMo's shape; `qa` and extra conversation keys vary per test. */
function sample(qa: unknown[], conversation: Record<string, unknown> = {}, id = 'conv-1') {
  return {
    sample_id: id,
    conversation: {
      speaker_a: 'Ann',
      speaker_b: 'Bob',
      session_1_date_time: '1:00 pm on 1 May, 2023',
      session_1: [
        turn('D1:1', 'Ann', 'Hi Bob!'),
        turn('D1:2', 'Bob', 'Look at my dog.', {
          img_url: ['https://example.invalid/dog.jpg'],
          blip_caption: 'a photo of a dog',
          query: 'dog',
        }),
        turn('D1:3', 'Ann', 'So cute.'),
      ],
      session_2_date_time: '2:00 pm on 2 May, 2023',
      session_2: [turn('D2:1', 'Bob', 'I moved to Paris.'), turn('D2:2', 'Ann', 'Wow.')],
      ...conversation,
    },
    qa,
    event_summary: {},
  };
}

function qa(evidence: string[], category = 4, question = 'Where does Bob live?') {
  return { question, answer: 'Paris', evidence, category };
}

function parse(raw: unknown, options: Partial<LocomoOptions> = {}): LoadedDataset {
  return parseLocomo(raw, locomoOptionsSchema.parse(options), source);
}

describe('locomoOptionsSchema', () => {
  it('defaults to turns, categories 1–4, captions on, repairs on', () => {
    expect(locomoOptionsSchema.parse({})).toEqual({
      granularity: 'turn',
      categories: [1, 2, 3, 4],
      includeImageCaptions: true,
      repairEvidence: true,
    });
  });

  it('rejects unknown options and categories outside 1..5', () => {
    expect(locomoOptionsSchema.safeParse({ granularity: 'word' }).success).toBe(false);
    expect(locomoOptionsSchema.safeParse({ categories: [6] }).success).toBe(false);
    expect(locomoOptionsSchema.safeParse({ extra: true }).success).toBe(false);
  });
});

describe('parseLocomo, turn level', () => {
  it('makes one memory per turn, with speaker, caption and provenance', () => {
    const { benchmark } = parse([sample([qa(['D2:1'])])]);
    expect(benchmark.memories.map((m) => m.id)).toEqual([
      'conv-1:D1:1',
      'conv-1:D1:2',
      'conv-1:D1:3',
      'conv-1:D2:1',
      'conv-1:D2:2',
    ]);
    expect(benchmark.memories[1]).toEqual({
      id: 'conv-1:D1:2',
      bankId: 'conv-1',
      text: 'Bob: Look at my dog. [image: a photo of a dog]',
      meta: { speaker: 'Bob', session: 1, sessionDate: '1:00 pm on 1 May, 2023', diaId: 'D1:2' },
    });
    expect(benchmark.name).toBe('locomo');
    expect(benchmark.sources).toEqual([source]);
  });

  it('leaves captions out when asked', () => {
    const { benchmark } = parse([sample([qa(['D2:1'])])], { includeImageCaptions: false });
    expect(benchmark.memories[1]?.text).toBe('Bob: Look at my dog.');
  });

  it('keeps a turn with only an image caption', () => {
    const raw = sample([qa(['D3:1'])], {
      session_3: [turn('D3:1', 'Bob', '', { blip_caption: 'a photo of a cat' })],
    });
    const { benchmark, report } = parse([raw]);
    expect(benchmark.memories.at(-1)?.text).toBe('Bob: [image: a photo of a cat]');
    expect(report.droppedCount('empty-text')).toBe(0);
  });

  it('builds queries with the bank as candidates and labels apart', () => {
    const { benchmark, labels } = parse([sample([qa(['D2:1', 'D1:3'], 1)])]);
    expect(benchmark.queries).toEqual([
      {
        id: 'conv-1:q0',
        text: 'Where does Bob live?',
        candidateBankIds: ['conv-1'],
        category: 'multi-hop',
        meta: { locomoCategory: 1 },
      },
    ]);
    expect([...labels.relevant('conv-1:q0')]).toEqual([
      ['conv-1:D2:1', 1],
      ['conv-1:D1:3', 1],
    ]);
  });

  it('never puts answers or evidence into the benchmark', () => {
    const raw = sample([
      qa(['D2:1']),
      {
        question: 'Is Bob a cat?',
        adversarial_answer: 'Whiskers',
        evidence: ['D1:2'],
        category: 5,
      },
    ]);
    const { benchmark } = parse([raw], { categories: [1, 2, 3, 4, 5] });
    const json = JSON.stringify(benchmark);
    expect(json).not.toContain('Paris"');
    expect(json).not.toContain('Whiskers');
    for (const q of benchmark.queries) expect(Object.keys(q.meta)).toEqual(['locomoCategory']);
  });

  it('names subtasks in declared order and records the options used', () => {
    const raw = sample([qa(['D2:1'], 4), qa(['D2:1'], 2), qa(['D2:1'], 5)]);
    const { benchmark } = parse([raw], { categories: [5, 4, 2] });
    expect(benchmark.subtasks).toEqual(['temporal', 'single-hop', 'adversarial']);
    expect(benchmark.options).toEqual({
      granularity: 'turn',
      categories: ['temporal', 'single-hop', 'adversarial'],
      includeImageCaptions: true,
      repairEvidence: true,
    });
  });
});

describe('parseLocomo, evidence repairs', () => {
  const repairs = [
    qa(['D1:1; D2:1']),
    qa(['D:2:1']),
    qa(['D02:01']),
    qa(['D1:3 D1:1']),
    qa(['D1:1', 'D1:1']),
  ];

  it('repairs every malformed form and reports it per query', () => {
    const { benchmark, labels, report } = parse([sample(repairs)]);
    expect(benchmark.queries).toHaveLength(5);
    expect([...labels.relevant('conv-1:q0').keys()]).toEqual(['conv-1:D1:1', 'conv-1:D2:1']);
    expect([...labels.relevant('conv-1:q1').keys()]).toEqual(['conv-1:D2:1']);
    expect([...labels.relevant('conv-1:q2').keys()]).toEqual(['conv-1:D2:1']);
    expect([...labels.relevant('conv-1:q3').keys()]).toEqual(['conv-1:D1:3', 'conv-1:D1:1']);
    expect([...labels.relevant('conv-1:q4').keys()]).toEqual(['conv-1:D1:1']);
    expect(report.toJSON().details.repaired).toEqual({
      'evidence-split-list': [
        { id: 'conv-1:q0', detail: "'D1:1; D2:1' → D1:1, D2:1" },
        { id: 'conv-1:q3', detail: "'D1:3 D1:1' → D1:3, D1:1" },
      ],
      'evidence-extra-colon': [{ id: 'conv-1:q1', detail: "'D:2:1' → D2:1" }],
      'evidence-leading-zero': [{ id: 'conv-1:q2', detail: "'D02:01' → D2:1" }],
      'evidence-duplicate': [{ id: 'conv-1:q4', detail: 'D1:1 listed twice; counted once' }],
    });
  });

  it('counts only exact matches when repairs are off', () => {
    const { benchmark, labels, report } = parse([sample(repairs)], { repairEvidence: false });
    expect(benchmark.queries.map((q) => q.id)).toEqual(['conv-1:q4']);
    expect(labels.pairCount).toBe(1);
    expect(report.toJSON().unresolved).toEqual({ 'evidence-malformed': 4 });
    expect(report.droppedCount('no-resolvable-evidence')).toBe(4);
    expect(report.repairedCount('evidence-split-list')).toBe(0);
  });

  it("keeps a query with one resolvable id and reports 'D' and unknown ids", () => {
    const { benchmark, labels, report } = parse([sample([qa(['D1:1', 'D', 'D10:19'])])]);
    expect(benchmark.queries).toHaveLength(1);
    expect([...labels.relevant('conv-1:q0').keys()]).toEqual(['conv-1:D1:1']);
    expect(report.toJSON().details.unresolved).toEqual({
      'evidence-malformed': [{ id: 'conv-1:q0', detail: "'D'" }],
      'evidence-unknown-id': [{ id: 'conv-1:q0', detail: 'D10:19' }],
    });
  });

  it('drops a query whose evidence does not resolve, or is empty', () => {
    const { benchmark, labels, report } = parse([sample([qa(['D10:19', 'D']), qa([], 3)])]);
    expect(benchmark.queries).toHaveLength(0);
    expect(labels.pairCount).toBe(0);
    expect(report.toJSON().details.dropped).toEqual({
      'no-resolvable-evidence': [{ id: 'conv-1:q0', detail: "'D10:19', 'D'" }],
      'no-evidence': [{ id: 'conv-1:q1', detail: 'empty evidence list' }],
    });
  });
});

describe('parseLocomo, drops', () => {
  it('drops and reports empty turns, repeated dia_ids and sessions without turns', () => {
    const raw = sample([qa(['D1:1'])], {
      session_3_date_time: '3 May',
      session_3: [turn('D3:1', 'Ann', '  '), turn('D1:1', 'Ann', 'again')],
      session_4_date_time: '4 May',
      session_5: [],
    });
    const { benchmark, labels, report } = parse([raw]);
    expect(benchmark.memories).toHaveLength(5);
    expect(labels.relevant('conv-1:q0').has('conv-1:D1:1')).toBe(true);
    expect(report.toJSON().details.dropped).toEqual({
      'empty-text': [{ id: 'conv-1:D3:1', detail: 'session_3[0] has no text' }],
      'duplicate-memory-id': [{ id: 'conv-1:D1:1', detail: 'session_3[1] repeats D1:1' }],
      'no-turns': [
        { id: 'conv-1:session_4', detail: 'session_4 has a date but no turns' },
        { id: 'conv-1:session_5', detail: 'session_5 has an empty turn list' },
      ],
    });
  });

  it('drops unknown, excluded and empty-question items, and repeated samples', () => {
    const raw = sample([qa(['D1:1'], 7), qa(['D1:1'], 5), qa(['D1:1'], 4, ' ')]);
    const { benchmark, report } = parse([raw, sample([], {}, 'conv-1')]);
    expect(benchmark.queries).toHaveLength(0);
    expect(report.toJSON().details.dropped).toEqual({
      'unknown-category': [{ id: 'conv-1:q0', detail: 'category 7' }],
      'excluded-category': [{ id: 'conv-1:q1', detail: 'category 5 (adversarial) not requested' }],
      'empty-text': [{ id: 'conv-1:q2', detail: 'empty question' }],
      'duplicate-sample-id': [{ id: 'conv-1', detail: 'sample [1] repeats this sample_id' }],
    });
  });
});

describe('parseLocomo, validation', () => {
  it('throws DataError naming the file when the top level is not an array', () => {
    expect(() => parse({ samples: [] })).toThrow(DataError);
    expect(() => parse({ samples: [] })).toThrow(/locomo-test\.json: expected a JSON array/);
  });

  it('reports bad records with file, record id and field path, and keeps the rest', () => {
    const bad = sample(
      [
        qa(['D1:1']),
        { question: 'q?', answer: 'a', evidence: 'D1:1', category: 1 },
        { question: 'q?', answer: 'a', evidence: ['D1:1'], category: '2' },
      ],
      { session_2: [turn('D2:1', 'Bob', 'ok'), { speaker: 'Ann', dia_id: 'D2:2' }] },
    );
    const { benchmark, report } = parse([bad, { sample_id: 'conv-2', qa: [] }, 42]);
    expect(benchmark.memories).toHaveLength(4);
    expect(benchmark.queries.map((q) => q.id)).toEqual(['conv-1:q0']);
    expect(report.issues.map((i) => [i.file, i.record, i.path])).toEqual([
      ['locomo-test.json', 'conv-1:D2:2', 'text'],
      ['locomo-test.json', 'conv-1:q1', 'evidence'],
      ['locomo-test.json', 'conv-1:q2', 'category'],
      ['locomo-test.json', 'conv-2', 'conversation'],
      ['locomo-test.json', '[2]', ''],
    ]);
    expect(report.droppedCount('invalid-record')).toBe(5);
  });

  it('names the session key when a session is not a list of turns', () => {
    const { report } = parse([sample([], { session_2: 'oops' })]);
    expect(report.issues[0]?.path).toBe('conversation.session_2');
    expect(report.issues[0]?.message).toContain('expected an array of turns');
  });
});

describe('parseLocomo, session level', () => {
  it('makes one memory per session and labels the sessions holding the evidence', () => {
    const raw = sample([qa(['D1:1', 'D1:3', 'D2:1']), qa(['D1:2'])]);
    const { benchmark, labels } = parse([raw], { granularity: 'session' });
    expect(benchmark.memories).toEqual([
      {
        id: 'conv-1:session_1',
        bankId: 'conv-1',
        text: 'Ann: Hi Bob!\nBob: Look at my dog. [image: a photo of a dog]\nAnn: So cute.',
        meta: {
          session: 1,
          sessionDate: '1:00 pm on 1 May, 2023',
          diaIds: ['D1:1', 'D1:2', 'D1:3'],
        },
      },
      {
        id: 'conv-1:session_2',
        bankId: 'conv-1',
        text: 'Bob: I moved to Paris.\nAnn: Wow.',
        meta: { session: 2, sessionDate: '2:00 pm on 2 May, 2023', diaIds: ['D2:1', 'D2:2'] },
      },
    ]);
    expect([...labels.relevant('conv-1:q0').keys()]).toEqual([
      'conv-1:session_1',
      'conv-1:session_2',
    ]);
    expect([...labels.relevant('conv-1:q1').keys()]).toEqual(['conv-1:session_1']);
    expect(labels.pairCount).toBe(3);
    expect(benchmark.options['granularity']).toBe('session');
  });

  it('drops a session none of whose turns has text', () => {
    const raw = sample([qa(['D1:1'])], { session_3: [turn('D3:1', 'Ann', '')] });
    const { benchmark, report } = parse([raw], { granularity: 'session' });
    expect(benchmark.memories).toHaveLength(2);
    expect(report.toJSON().details.dropped['empty-text']).toEqual([
      { id: 'conv-1:D3:1', detail: 'session_3[0] has no text' },
      { id: 'conv-1:session_3', detail: 'no turn of session_3 has text' },
    ]);
  });
});
