import { describe, expect, it } from 'vitest';
import { formatLoadSummary, summarizeLoad } from '@bfe/core';
import type { LoadedDataset } from '@bfe/core';
import {
  LONGMEMEVAL_PROTOCOLS,
  longMemEvalOptionsSchema,
  type LongMemEvalOptionsInput,
} from './longmemeval-options.js';
import { parseLongMemEval } from './longmemeval.js';

const source = { name: 'lme-protocol-test.json', sha256: 'c'.repeat(64) };

type Turn = { role: 'user' | 'assistant'; content: string; has_answer?: boolean };

/** One session of each kind the two protocols treat differently. */
const SESSIONS: Record<string, Turn[]> = {
  filler: [
    { role: 'user', content: 'I like tea.' },
    { role: 'assistant', content: 'Tea is nice.' },
  ],
  // Evidence in a user turn: relevant under both protocols.
  user_side: [
    { role: 'user', content: 'My dog is called Rex.', has_answer: true },
    { role: 'assistant', content: 'Cute name!' },
  ],
  // Evidence only in an assistant turn: what single-session-assistant questions look like.
  assistant_side: [
    { role: 'user', content: 'Suggest a wine.' },
    { role: 'assistant', content: 'Try a Rioja.', has_answer: true },
  ],
  // An answer session with no has_answer turn at all (LongMemEval has 45 such sessions in S).
  unmarked: [
    { role: 'user', content: 'I moved to Lyon.' },
    { role: 'assistant', content: 'Enjoy Lyon!' },
  ],
};

function question(id: string, answers: string[], haystack: string[]): Record<string, unknown> {
  return {
    question_id: id,
    question_type: 'single-session-user',
    question: `Question ${id}?`,
    answer: 'x',
    question_date: '2023/05/30 (Tue) 10:18',
    haystack_session_ids: haystack,
    haystack_sessions: haystack.map((s) => SESSIONS[s]),
    answer_session_ids: answers,
  };
}

const RAW = [
  question('q_user', ['user_side'], ['filler', 'user_side']),
  question('q_assistant', ['assistant_side'], ['filler', 'assistant_side']),
  question('q_unmarked', ['unmarked'], ['filler', 'unmarked']),
  question('q_none', [], ['filler']),
  question('q_user_abs', ['user_side'], ['filler', 'user_side']),
];

function load(options: LongMemEvalOptionsInput): LoadedDataset {
  const parsed = longMemEvalOptionsSchema.parse({ ids: 'source', ...options });
  return parseLongMemEval(RAW, parsed, source, 'longmemeval-s');
}

describe('longMemEvalOptionsSchema, protocols', () => {
  it('resolves each protocol to its text and relevance policies', () => {
    expect(longMemEvalOptionsSchema.parse({})).toEqual({
      protocol: 'longmemeval',
      textPolicy: 'user-turns',
      relevance: 'has-answer',
      ids: 'opaque',
    });
    expect(longMemEvalOptionsSchema.parse({ protocol: 'paper' })).toEqual({
      protocol: 'paper',
      textPolicy: 'all-turns',
      relevance: 'answer-session-ids',
      ids: 'opaque',
    });
    expect(LONGMEMEVAL_PROTOCOLS.paper).toEqual({
      textPolicy: 'all-turns',
      relevance: 'answer-session-ids',
    });
  });

  it('names the protocol the policies amount to, and none for a mix', () => {
    const spelled = { textPolicy: 'all-turns', relevance: 'answer-session-ids' } as const;
    expect(longMemEvalOptionsSchema.parse(spelled).protocol).toBe('paper');
    const mix = longMemEvalOptionsSchema.parse({ textPolicy: 'all-turns' });
    expect(mix).toEqual({ textPolicy: 'all-turns', relevance: 'has-answer', ids: 'opaque' });
  });

  it('refuses a policy that contradicts the named protocol', () => {
    const r = longMemEvalOptionsSchema.safeParse({ protocol: 'paper', textPolicy: 'user-turns' });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => [i.path, i.message])).toEqual([
      [
        ['textPolicy'],
        "protocol 'paper' fixes textPolicy 'all-turns'; drop textPolicy 'user-turns' or drop " +
          'protocol to set textPolicy on its own',
      ],
    ]);
    const own = { protocol: 'longmemeval', relevance: 'answer-session-ids' };
    expect(longMemEvalOptionsSchema.safeParse(own).success).toBe(false);
    // Agreeing with the protocol is allowed; an unknown protocol is not.
    expect(
      longMemEvalOptionsSchema.safeParse({ protocol: 'paper', textPolicy: 'all-turns' }),
    ).toMatchObject({ success: true });
    expect(longMemEvalOptionsSchema.safeParse({ protocol: 'lmeb' }).success).toBe(false);
  });
});

describe('parseLongMemEval under each protocol', () => {
  it("'longmemeval': user turns, user-side evidence, every other question dropped by reason", () => {
    const { benchmark, labels, report } = load({ protocol: 'longmemeval' });
    expect(benchmark.queries.map((q) => q.id)).toEqual(['q_user']);
    expect(labels.toRows()).toEqual([['q_user', 'user_side', 1]]);
    expect(benchmark.memories.map((m) => [m.id, m.text])).toEqual([
      ['filler', 'I like tea.'],
      ['user_side', 'My dog is called Rex.'],
    ]);
    // The default protocol is not written into the options: its benchmark hash is unchanged.
    expect(benchmark.options).toEqual({
      textPolicy: 'user-turns',
      relevance: 'has-answer',
      ids: 'source',
    });
    const json = report.toJSON();
    expect(json.details.dropped).toEqual({
      'assistant-evidence-only': [
        { id: 'q_assistant', detail: 'has_answer only on assistant turns of assistant_side' },
      ],
      'no-resolvable-evidence': [
        { id: 'q_unmarked', detail: 'no answer session has a user turn with has_answer' },
      ],
      'no-evidence': [{ id: 'q_none', detail: 'empty answer_session_ids' }],
      abstention: [{ id: 'q_user_abs', detail: '' }],
      'not-in-kept-haystack': [
        { id: 'assistant_side', detail: 'listed only by dropped questions' },
        { id: 'unmarked', detail: 'listed only by dropped questions' },
      ],
    });
    expect(formatLoadSummary(summarizeLoad(json))).toBe(
      '6 dropped (1 assistant-evidence-only, 1 no-resolvable-evidence, 1 no-evidence, ' +
        '1 abstention, 2 not-in-kept-haystack)',
    );
  });

  it("'paper': whole sessions, every non-abstention question with answer sessions", () => {
    const { benchmark, labels, report } = load({ protocol: 'paper' });
    expect(benchmark.queries.map((q) => q.id)).toEqual(['q_user', 'q_assistant', 'q_unmarked']);
    expect(labels.toRows()).toEqual([
      ['q_user', 'user_side', 1],
      ['q_assistant', 'assistant_side', 1],
      ['q_unmarked', 'unmarked', 1],
    ]);
    expect(benchmark.memories.map((m) => [m.id, m.text])).toEqual([
      ['filler', 'user: I like tea.\nassistant: Tea is nice.'],
      ['user_side', 'user: My dog is called Rex.\nassistant: Cute name!'],
      ['assistant_side', 'user: Suggest a wine.\nassistant: Try a Rioja.'],
      ['unmarked', 'user: I moved to Lyon.\nassistant: Enjoy Lyon!'],
    ]);
    expect(benchmark.options).toEqual({
      protocol: 'paper',
      textPolicy: 'all-turns',
      relevance: 'answer-session-ids',
      ids: 'source',
    });
    const json = report.toJSON();
    expect(json.dropped).toEqual({ 'no-evidence': 1, abstention: 1 });
    expect(formatLoadSummary(summarizeLoad(json))).toBe('2 dropped (1 no-evidence, 1 abstention)');
  });

  it('gives the same benchmark whether the paper protocol is named or spelled out', () => {
    const named = load({ protocol: 'paper' });
    const spelled = load({ textPolicy: 'all-turns', relevance: 'answer-session-ids' });
    expect(spelled.benchmark).toEqual(named.benchmark);
    expect(spelled.labels.toRows()).toEqual(named.labels.toRows());
  });
});
