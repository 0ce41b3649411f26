import { describe, expect, it } from 'vitest';
import { DataError } from '@bfe/core';
import type { LoadedDataset } from '@bfe/core';
import { longMemEvalOptionsSchema, type LongMemEvalOptionsInput } from './longmemeval-options.js';
import { parseLongMemEval } from './longmemeval.js';

const source = { name: 'lme-test.json', sha256: 'b'.repeat(64) };

type Turn = { role: string; content: string; has_answer?: boolean };
const user = (content: string, hasAnswer?: boolean): Turn =>
  hasAnswer === undefined
    ? { role: 'user', content }
    : { role: 'user', content, has_answer: hasAnswer };
const assistant = (content: string, hasAnswer?: boolean): Turn =>
  hasAnswer === undefined
    ? { role: 'assistant', content }
    : { role: 'assistant', content, has_answer: hasAnswer };

/** Sessions by id, reused across questions the way LongMemEval reuses filler sessions. */
const SESSIONS: Record<string, Turn[]> = {
  filler_1: [user('I like tea.'), assistant('Tea is nice.')],
  filler_2: [user('Book a table.'), assistant('Done.')],
  answer_a: [user('My dog is called Rex.', true), assistant('Cute name!', false)],
  answer_b: [user('Hello there.', false), assistant('Your flight is at 9.', true)],
  assistant_only: [assistant('Hello, how can I help?')],
};

function question(
  id: string,
  haystack: string[],
  answers: string[],
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    question_id: id,
    question_type: 'single-session-user',
    question: `Question ${id}?`,
    answer: 42,
    question_date: '2023/05/30 (Tue) 10:18',
    haystack_dates: haystack.map(() => '2023/05/20 (Sat) 07:47'),
    haystack_session_ids: haystack,
    haystack_sessions: haystack.map((s) => SESSIONS[s]),
    answer_session_ids: answers,
    ...extra,
  };
}

/** Source ids keep these tests readable; the opaque-id renaming has its own tests below. */
function parse(raw: unknown, options: LongMemEvalOptionsInput = {}): LoadedDataset {
  return parseLongMemEval(
    raw,
    longMemEvalOptionsSchema.parse({ ids: 'source', ...options }),
    source,
    'longmemeval-s',
  );
}

describe('longMemEvalOptionsSchema', () => {
  it("defaults to LongMemEval's own protocol", () => {
    expect(longMemEvalOptionsSchema.parse({})).toEqual({
      protocol: 'longmemeval',
      textPolicy: 'user-turns',
      relevance: 'has-answer',
      ids: 'opaque',
    });
    expect(longMemEvalOptionsSchema.safeParse({ relevance: 'gold' }).success).toBe(false);
  });
});

describe('parseLongMemEval', () => {
  it('makes session memories from user turns and queries over their own haystack', () => {
    const raw = [question('q1', ['filler_1', 'answer_a', 'filler_2'], ['answer_a'])];
    const { benchmark, labels } = parse(raw);
    expect(benchmark.memories).toEqual([
      { id: 'filler_1', bankId: 'filler_1', text: 'I like tea.', meta: {} },
      { id: 'answer_a', bankId: 'answer_a', text: 'My dog is called Rex.', meta: {} },
      { id: 'filler_2', bankId: 'filler_2', text: 'Book a table.', meta: {} },
    ]);
    expect(benchmark.queries).toEqual([
      {
        id: 'q1',
        text: 'Question q1?',
        candidateIds: ['filler_1', 'answer_a', 'filler_2'],
        category: 'single-session-user',
        meta: { questionDate: '2023/05/30 (Tue) 10:18' },
      },
    ]);
    expect(labels.toRows()).toEqual([['q1', 'answer_a', 1]]);
    expect(benchmark.name).toBe('longmemeval-s');
    expect(benchmark.options).toEqual({
      textPolicy: 'user-turns',
      relevance: 'has-answer',
      ids: 'source',
    });
    expect(benchmark.subtasks).toEqual(['single-session-user']);
    expect(benchmark.sources).toEqual([source]);
  });

  it('joins user turns with a space, or writes every turn as a role line', () => {
    const raw = [question('q1', ['answer_b'], ['answer_b'])];
    const userText = parse(raw, { relevance: 'answer-session-ids' }).benchmark.memories[0]?.text;
    expect(userText).toBe('Hello there.');
    const all = parse(raw, { textPolicy: 'all-turns', relevance: 'answer-session-ids' });
    expect(all.benchmark.memories[0]?.text).toBe(
      'user: Hello there.\nassistant: Your flight is at 9.',
    );
  });

  it('never puts answers or has_answer into the benchmark', () => {
    const { benchmark } = parse([question('q1', ['answer_a'], ['answer_a'], { answer: 'Rex!' })]);
    const json = JSON.stringify(benchmark);
    expect(json).not.toContain('Rex!');
    expect(json).not.toContain('has_answer');
    expect(Object.keys(benchmark.queries[0]?.meta ?? {})).toEqual(['questionDate']);
  });

  it('orders subtasks as LongMemEval declares them', () => {
    const raw = [
      question('q1', ['answer_a'], ['answer_a'], { question_type: 'temporal-reasoning' }),
      question('q2', ['answer_a'], ['answer_a'], { question_type: 'multi-session' }),
    ];
    expect(parse(raw).benchmark.subtasks).toEqual(['multi-session', 'temporal-reasoning']);
  });
});

describe('parseLongMemEval, relevance policies', () => {
  // answer_b's evidence is in an assistant turn: not user-side evidence.
  const raw = [question('q1', ['filler_1', 'answer_a', 'answer_b'], ['answer_a', 'answer_b'])];

  it("'has-answer' keeps answer sessions with a user turn marked has_answer", () => {
    const { labels } = parse(raw);
    expect(labels.toRows()).toEqual([['q1', 'answer_a', 1]]);
  });

  it("'answer-session-ids' keeps every answer session", () => {
    const { labels } = parse(raw, { relevance: 'answer-session-ids' });
    expect(labels.toRows()).toEqual([
      ['q1', 'answer_a', 1],
      ['q1', 'answer_b', 1],
    ]);
  });

  it("drops a question without user-side evidence under 'has-answer' only", () => {
    const assistantSide = [question('q1', ['filler_1', 'answer_b'], ['answer_b'])];
    const strict = parse(assistantSide);
    expect(strict.benchmark.queries).toHaveLength(0);
    expect(strict.report.toJSON().details.dropped).toEqual({
      'assistant-evidence-only': [
        { id: 'q1', detail: 'has_answer only on assistant turns of answer_b' },
      ],
      'not-in-kept-haystack': [
        { id: 'filler_1', detail: 'listed only by dropped questions' },
        { id: 'answer_b', detail: 'listed only by dropped questions' },
      ],
    });
    expect(
      parse(assistantSide, { relevance: 'answer-session-ids' }).benchmark.queries,
    ).toHaveLength(1);
  });
});

describe('parseLongMemEval, shared sessions', () => {
  it('makes one memory of a session shared by several haystacks', () => {
    const raw = [
      question('q1', ['filler_1', 'answer_a'], ['answer_a']),
      question('q2', ['answer_a', 'filler_2', 'filler_1'], ['answer_a']),
    ];
    const { benchmark, report } = parse(raw);
    expect(benchmark.memories.map((m) => m.id)).toEqual(['filler_1', 'answer_a', 'filler_2']);
    expect(benchmark.queries[1]?.candidateIds).toEqual(['answer_a', 'filler_2', 'filler_1']);
    expect(report.toJSON().unresolved).toEqual({});
  });

  it('keeps the first copy and reports a shared session whose content differs', () => {
    const changed = question('q2', ['filler_1', 'answer_a'], ['answer_a']);
    changed['haystack_sessions'] = [[user('I like coffee.')], SESSIONS['answer_a']];
    const raw = [question('q1', ['filler_1', 'answer_a'], ['answer_a']), changed];
    const { benchmark, report } = parse(raw);
    expect(benchmark.memories.find((m) => m.id === 'filler_1')?.text).toBe('I like tea.');
    expect(benchmark.memories).toHaveLength(2);
    expect(report.toJSON().details.unresolved).toEqual({
      'session-content-conflict': [
        {
          id: 'filler_1',
          detail: 'question q2, haystack [0]: differs from the first copy; the first is kept',
        },
      ],
    });
  });

  it('lists a session repeated within one haystack once, and reports it', () => {
    const raw = [question('q1', ['filler_1', 'answer_a', 'filler_1'], ['answer_a'])];
    const { benchmark, report } = parse(raw);
    expect(benchmark.queries[0]?.candidateIds).toEqual(['filler_1', 'answer_a']);
    expect(report.toJSON().details.repaired).toEqual({
      'duplicate-haystack-session': [{ id: 'q1', detail: 'filler_1 listed again at [2]' }],
    });
  });

  it('takes memories only from the haystacks of kept questions', () => {
    const raw = [
      question('q1_abs', ['filler_2', 'answer_a'], ['answer_a']),
      question('q2', ['filler_1', 'answer_b'], ['answer_b']),
      question('q3', ['filler_1', 'answer_a'], ['answer_a']),
    ];
    const { benchmark, report } = parse(raw);
    expect(benchmark.memories.map((m) => m.id)).toEqual(['filler_1', 'answer_a']);
    expect(report.toJSON().details.dropped['not-in-kept-haystack']).toEqual([
      { id: 'filler_2', detail: 'listed only by dropped questions' },
      { id: 'answer_b', detail: 'listed only by dropped questions' },
    ]);
  });
});

describe('parseLongMemEval, drops', () => {
  it("abstention 'only' keeps the abstention questions alone, with their answer sessions", () => {
    const raw = [
      question('q1_abs', ['filler_2', 'answer_a'], ['answer_a']),
      question('q2', ['filler_1', 'answer_b'], ['answer_b']),
    ];
    const { benchmark, labels, report } = parse(raw, { abstention: 'only' });
    expect(benchmark.queries.map((q) => q.id)).toEqual(['q1_abs']);
    expect(benchmark.memories.map((m) => m.id)).toEqual(['filler_2', 'answer_a']);
    expect([...labels.relevant('q1_abs').keys()]).toEqual(['answer_a']);
    expect(benchmark.options).toMatchObject({ abstention: 'only' });
    expect(report.toJSON().details.dropped['not-abstention']).toEqual([{ id: 'q2', detail: '' }]);
    // Unset and 'drop' load the same benchmark (and hash) as before the option existed.
    expect(parse(raw, { abstention: 'drop' }).benchmark).toEqual(parse(raw).benchmark);
    expect(parse(raw).benchmark.options).not.toHaveProperty('abstention');
  });

  it('keeps the first maxQueries kept questions in file order, and only their sessions', () => {
    const raw = [
      question('q1_abs', ['filler_2', 'answer_a'], ['answer_a']),
      question('q2', ['filler_1', 'answer_a'], ['answer_a']),
      question('q3', ['filler_2', 'answer_a'], ['answer_a']),
      question('q4', ['assistant_only', 'answer_b'], ['answer_b']),
    ];
    const { benchmark, report } = parse(raw, { maxQueries: 2 });
    expect(benchmark.queries.map((q) => q.id)).toEqual(['q2', 'q3']);
    expect(benchmark.memories.map((m) => m.id).sort()).toEqual(
      ['answer_a', 'filler_1', 'filler_2'].sort(),
    );
    expect(benchmark.options).toMatchObject({ maxQueries: 2 });
    expect(report.toJSON().details.dropped['beyond-max-queries']).toEqual([
      { id: 'q4', detail: 'only the first 2 are kept' },
    ]);
    expect(parse(raw).benchmark.options).not.toHaveProperty('maxQueries');
    expect(() => longMemEvalOptionsSchema.parse({ maxQueries: 0 })).toThrow();
  });

  it('drops abstention, unknown-type, empty and evidence-less questions, and repeats', () => {
    const raw = [
      question('q1_abs', ['answer_a'], ['answer_a']),
      question('q2', ['answer_a'], ['answer_a'], { question_type: 'trivia' }),
      question('q3', ['answer_a'], ['answer_a'], { question: '  ' }),
      question('q4', ['answer_a'], []),
      question('q5', ['answer_a'], ['answer_a']),
      question('q5', ['answer_a'], ['answer_a']),
    ];
    const { benchmark, report } = parse(raw);
    expect(benchmark.queries.map((q) => q.id)).toEqual(['q5']);
    expect(report.toJSON().details.dropped).toEqual({
      abstention: [{ id: 'q1_abs', detail: '' }],
      'unknown-category': [{ id: 'q2', detail: "question_type 'trivia'" }],
      'empty-text': [{ id: 'q3', detail: 'empty question' }],
      'no-evidence': [{ id: 'q4', detail: 'empty answer_session_ids' }],
      'duplicate-query-id': [{ id: 'q5', detail: 'question [5] repeats this question_id' }],
    });
  });

  it('drops a session with no text under the policy, once, and reports the lost answer', () => {
    const raw = [
      question('q1', ['assistant_only', 'answer_a'], ['answer_a']),
      question('q2', ['assistant_only', 'answer_a'], ['assistant_only', 'answer_a']),
    ];
    const { benchmark, report } = parse(raw, { relevance: 'answer-session-ids' });
    expect(benchmark.memories.map((m) => m.id)).toEqual(['answer_a']);
    expect(benchmark.queries[1]?.candidateIds).toEqual(['answer_a']);
    expect(report.toJSON().details.dropped).toEqual({
      'empty-text': [{ id: 'assistant_only', detail: "no text under textPolicy 'user-turns'" }],
    });
    expect(report.toJSON().details.unresolved).toEqual({
      'answer-session-dropped': [{ id: 'q2', detail: 'assistant_only has no text' }],
    });
    const allTurns = parse(raw, { relevance: 'answer-session-ids', textPolicy: 'all-turns' });
    expect(allTurns.benchmark.memories.map((m) => m.id)).toEqual(['assistant_only', 'answer_a']);
  });
});

describe('parseLongMemEval, validation', () => {
  it('throws DataError naming the file when the top level is not an array', () => {
    expect(() => parse({ questions: [] })).toThrow(DataError);
    expect(() => parse('x')).toThrow(/lme-test\.json: expected a JSON array .*got a string/);
  });

  it('reports bad questions and bad sessions with file, record id and field path', () => {
    const badTurn = question('q2', ['filler_1', 'answer_a'], ['answer_a']);
    badTurn['haystack_sessions'] = [
      [user('ok'), { role: 'system', content: 'x' }],
      SESSIONS['answer_a'],
    ];
    const raw = [
      question('q1', ['filler_1', 'answer_a'], ['answer_a'], { haystack_sessions: [[]] }),
      badTurn,
      { question: 'no id' },
    ];
    const { benchmark, report } = parse(raw);
    expect(benchmark.queries.map((q) => q.id)).toEqual(['q2']);
    expect(benchmark.queries[0]?.candidateIds).toEqual(['answer_a']);
    expect(report.issues.map((i) => [i.file, i.record, i.path])).toEqual([
      ['lme-test.json', 'q1', 'haystack_sessions'],
      ['lme-test.json', 'q2:filler_1', '[1].role'],
      ['lme-test.json', '[2]', 'question_id'],
    ]);
    expect(report.droppedCount('invalid-record')).toBe(3);
  });

  it('reports an answer session that is not a valid session of the haystack', () => {
    const raw = [question('q1', ['filler_1', 'answer_a'], ['answer_a', 'answer_x'])];
    const { benchmark, report } = parse(raw);
    expect(benchmark.queries).toHaveLength(1);
    expect(report.toJSON().details.unresolved).toEqual({
      'answer-session-missing': [
        { id: 'q1', detail: 'answer_x is not a valid session of the haystack' },
      ],
    });
  });
});

describe('parseLongMemEval, opaque ids (default)', () => {
  const raw = [
    question('q1', ['filler_1', 'answer_a', 'filler_2'], ['answer_a']),
    question('q2', ['answer_a', 'filler_2'], ['answer_a']),
  ];
  const opaque = parseLongMemEval(raw, longMemEvalOptionsSchema.parse({}), source, 'longmemeval-s');
  const plain = parse(raw);

  it('hides the answer_ naming from ids, bank ids and candidates', () => {
    const ids = opaque.benchmark.memories.map((m) => m.id);
    expect(ids.every((id) => /^lme-[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(opaque.benchmark.memories.every((m) => m.bankId === m.id)).toBe(true);
    const json = JSON.stringify(opaque.benchmark);
    expect(json).not.toContain('answer_');
    expect(json).not.toContain('filler_');
  });

  it('sorts memories and candidates by opaque id, so haystack order cannot point at gold', () => {
    const ids = opaque.benchmark.memories.map((m) => m.id);
    expect(ids).toEqual([...ids].sort());
    for (const q of opaque.benchmark.queries) {
      expect(q.candidateIds).toEqual([...(q.candidateIds ?? [])].sort());
    }
  });

  it('keeps the same texts, queries and labels under a consistent renaming', () => {
    const back = opaque.sourceIds!;
    expect(back.size).toBe(plain.benchmark.memories.length);
    for (const m of opaque.benchmark.memories) {
      const original = plain.benchmark.memories.find((p) => p.id === back.get(m.id));
      expect(original?.text).toBe(m.text);
    }
    for (const q of opaque.benchmark.queries) {
      const relevant = [...opaque.labels.relevant(q.id).keys()].map((id) => back.get(id));
      expect(relevant).toEqual([...plain.labels.relevant(q.id).keys()]);
      const candidates = (q.candidateIds ?? []).map((id) => back.get(id)).sort();
      const original = plain.benchmark.queries.find((p) => p.id === q.id);
      expect(candidates).toEqual([...(original?.candidateIds ?? [])].sort());
    }
  });
});
