import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DataError, LoadReport, RelevanceLabels, validateRecord } from '@bfe/core';
import type { LoadedDataset, Memory, Query, SourceFile } from '@bfe/core';
import type { LongMemEvalOptions } from './longmemeval-options.js';

/**
 * LongMemEval's question types in the order the paper lists them; `benchmark.subtasks` keeps
 * this order.
 */
export const LONGMEMEVAL_QUESTION_TYPES = [
  'single-session-user',
  'single-session-assistant',
  'single-session-preference',
  'multi-session',
  'knowledge-update',
  'temporal-reasoning',
] as const;

// Only the fields the parser uses are validated; answers and haystack dates are ignored.
// Sessions are validated one by one below, so one bad session does not cost the question.
const questionSchema = z
  .object({
    question_id: z.string().min(1),
    question_type: z.string(),
    question: z.string(),
    question_date: z.string(),
    haystack_session_ids: z.array(z.string().min(1)),
    haystack_sessions: z.array(z.unknown()),
    answer_session_ids: z.array(z.string()),
  })
  .refine((q) => q.haystack_sessions.length === q.haystack_session_ids.length, {
    path: ['haystack_sessions'],
    message: 'needs exactly one session per haystack_session_ids entry',
  });

const sessionSchema = z.array(
  z.object({
    role: z.enum(['user', 'assistant']),
    content: z.string(),
    has_answer: z.boolean().optional(),
  }),
);
type Turn = z.infer<typeof sessionSchema>[number];

/** A session met before: its first copy, and whether it became a memory or was dropped. */
interface SessionDecision {
  readonly turns: readonly Turn[];
  readonly isMemory: boolean;
}

/**
 * Parses a LongMemEval file (S, M or oracle: an array of questions, each with its own haystack)
 * into the canonical form. Pure: the caller reads (and unpacks) the file.
 *
 * Memories are sessions, id and bank id both the (by default opaque) session id, so that the split can see which
 * haystacks share a session; a session shared by several haystacks is one memory (a differing
 * copy is reported as `session-content-conflict`, the first kept). Only sessions in the
 * haystack of a kept question become memories; the others are dropped as
 * `not-in-kept-haystack`. A query's candidates are its own haystack.
 * Abstention questions (`_abs`; with `abstention: 'only'`, every other question) and questions
 * left without a relevant session are dropped and counted: under `relevance: 'has-answer'`, a question whose `has_answer` turns are all assistant
 * turns as `assistant-evidence-only`, any other as `no-resolvable-evidence`. `options.protocol`
 * names the usual combinations (`longmemeval-options.ts`).
 *
 * @throws {DataError} when `raw` is not an array.
 * @example
 * const options = longMemEvalOptionsSchema.parse({});
 * const { benchmark, labels } = parseLongMemEval(json, options, source, 'longmemeval-s');
 * benchmark.queries.length; // 418 on the 498-question S file (468 with protocol 'paper')
 * benchmark.queries[0];
 * // { id: '001be529', text: 'How long did I wait…', candidateIds: ['lme-0a1f…', …],
 * //   category: 'single-session-user', meta: { questionDate: '2023/05/30 (Tue) 10:18' } }
 * labels.relevant('001be529'); // Map { 'lme-…' => 1 }; loaded.sourceIds maps it back to 'answer_530960c1'
 */
export function parseLongMemEval(
  raw: unknown,
  options: LongMemEvalOptions,
  source: SourceFile,
  name: string,
): LoadedDataset {
  const file = source.name;
  if (!Array.isArray(raw)) {
    const message = `${file}: expected a JSON array of LongMemEval questions, got ${kindOf(raw)}`;
    throw new DataError(message, { file });
  }
  const report = new LoadReport(name);
  const labels = new RelevanceLabels();
  const memories: Memory[] = [];
  const queries: Query[] = [];
  const queryIds = new Set<string>();
  const knownTypes = new Set<string>(LONGMEMEVAL_QUESTION_TYPES);
  // Sessions already decided: memories of kept questions and sessions dropped as empty. The
  // first copy is the reference every later copy is compared with.
  const decided = new Map<string, SessionDecision>();
  // Every session id listed by a valid question, and those with an invalid copy: at the end,
  // the sessions no kept question reached are reported, not lost silently.
  const listed = new Set<string>();
  const invalid = new Set<string>();

  for (let index = 0; index < raw.length; index++) {
    const rawQuestion: unknown = raw[index];
    const record = stringField(rawQuestion, 'question_id') ?? `[${index}]`;
    if (options.maxQueries !== undefined && queries.length >= options.maxQueries) {
      report.drop('beyond-max-queries', record, `only the first ${options.maxQueries} are kept`);
      continue;
    }
    const q = validateRecord(questionSchema, rawQuestion, { file, record }, report);
    if (q === undefined) continue;
    const id = q.question_id;
    if (queryIds.has(id)) {
      report.drop('duplicate-query-id', id, `question [${index}] repeats this question_id`);
      continue;
    }
    queryIds.add(id);
    for (const sessionId of q.haystack_session_ids) listed.add(sessionId);
    if (id.endsWith('_abs') !== (options.abstention === 'only')) {
      // Abstention questions have no evidence by design; LongMemEval skips them in retrieval.
      // `abstention: 'only'` keeps them alone (their answer sessions as labels), for measuring
      // whether a score says "nothing relevant here" (`bfe calibrate`).
      report.drop(id.endsWith('_abs') ? 'abstention' : 'not-abstention', id);
      continue;
    }
    if (!knownTypes.has(q.question_type)) {
      report.drop('unknown-category', id, `question_type '${q.question_type}'`);
      continue;
    }
    if (q.question.trim() === '') {
      report.drop('empty-text', id, 'empty question');
      continue;
    }
    if (q.answer_session_ids.length === 0) {
      report.drop('no-evidence', id, 'empty answer_session_ids');
      continue;
    }

    // This question's own copy of each session: relevance is judged on it.
    const own = new Map<string, readonly Turn[]>();
    const candidates: string[] = [];
    const staged: Memory[] = [];
    const stagedTurns: Array<readonly Turn[]> = [];
    for (let s = 0; s < q.haystack_session_ids.length; s++) {
      const sessionId = q.haystack_session_ids[s] as string;
      const turns = validateRecord(
        sessionSchema,
        q.haystack_sessions[s],
        { file, record: `${id}:${sessionId}` },
        report,
      );
      if (turns === undefined) {
        invalid.add(sessionId);
        continue;
      }
      const first = own.get(sessionId) ?? decided.get(sessionId)?.turns;
      if (first !== undefined && !sameContent(first, turns)) {
        report.unresolved(
          'session-content-conflict',
          sessionId,
          `question ${id}, haystack [${s}]: differs from the first copy; the first is kept`,
        );
      }
      if (own.has(sessionId)) {
        report.repair('duplicate-haystack-session', id, `${sessionId} listed again at [${s}]`);
        continue;
      }
      own.set(sessionId, turns);
      const known = decided.get(sessionId);
      if (known !== undefined) {
        if (known.isMemory) candidates.push(sessionId);
        continue;
      }
      const text = sessionText(turns, options.textPolicy);
      if (text.trim() === '') {
        decided.set(sessionId, { turns, isMemory: false });
        report.drop('empty-text', sessionId, `no text under textPolicy '${options.textPolicy}'`);
        continue;
      }
      staged.push({ id: sessionId, bankId: sessionId, text, meta: {} });
      stagedTurns.push(turns);
      candidates.push(sessionId);
    }

    const candidateSet = new Set(candidates);
    const relevant: string[] = [];
    for (const answerId of new Set(q.answer_session_ids)) {
      const turns = own.get(answerId);
      if (turns === undefined) {
        report.unresolved(
          'answer-session-missing',
          id,
          `${answerId} is not a valid session of the haystack`,
        );
        continue;
      }
      if (options.relevance === 'has-answer' && !turns.some(isUserEvidence)) continue;
      if (!candidateSet.has(answerId)) {
        report.unresolved('answer-session-dropped', id, `${answerId} has no text`);
        continue;
      }
      relevant.push(answerId);
    }
    if (relevant.length === 0) {
      const assistantSide =
        options.relevance === 'has-answer'
          ? [...own].filter(
              ([sessionId, turns]) =>
                q.answer_session_ids.includes(sessionId) && turns.some(isAssistantEvidence),
            )
          : [];
      if (assistantSide.length > 0) {
        // LongMemEval's own protocol judges evidence on user turns: a question answered only by
        // what the assistant said (most single-session-assistant questions) has none.
        const where = assistantSide.map(([sessionId]) => sessionId).join(', ');
        report.drop(
          'assistant-evidence-only',
          id,
          `has_answer only on assistant turns of ${where}`,
        );
        continue;
      }
      const why =
        options.relevance === 'has-answer'
          ? 'no answer session has a user turn with has_answer'
          : 'no answer session became a memory';
      report.drop('no-resolvable-evidence', id, why);
      continue;
    }

    for (let m = 0; m < staged.length; m++) {
      const memory = staged[m] as Memory;
      memories.push(memory);
      decided.set(memory.id, { turns: stagedTurns[m] as readonly Turn[], isMemory: true });
    }
    queries.push({
      id,
      text: q.question,
      candidateIds: candidates,
      category: q.question_type,
      meta: { questionDate: q.question_date },
    });
    for (const memoryId of relevant) labels.add(id, memoryId);
  }

  for (const sessionId of listed) {
    if (decided.has(sessionId) || invalid.has(sessionId)) continue;
    report.drop('not-in-kept-haystack', sessionId, 'listed only by dropped questions');
  }

  const used = new Set(queries.map((query) => query.category));
  const loaded: LoadedDataset = {
    benchmark: {
      name,
      options: {
        // Only the non-default protocol is written down, so LongMemEval's own protocol keeps
        // the benchmark hash it had before protocols had names.
        ...(options.protocol === 'paper' ? { protocol: options.protocol } : {}),
        textPolicy: options.textPolicy,
        relevance: options.relevance,
        ids: options.ids,
        ...(options.maxQueries === undefined ? {} : { maxQueries: options.maxQueries }),
        ...(options.abstention === 'only' ? { abstention: options.abstention } : {}),
      },
      memories,
      queries,
      subtasks: LONGMEMEVAL_QUESTION_TYPES.filter((type) => used.has(type)),
      sources: [source],
    },
    labels,
    report,
  };
  return options.ids === 'opaque' ? withOpaqueIds(loaded) : loaded;
}

/**
 * Renames every session to an id derived from a hash of its source id and sorts memories and
 * candidates by it, so neither ids nor order carry LongMemEval's `answer_` naming. The source
 * ids stay available in `sourceIds` for per-query output.
 */
function withOpaqueIds({ benchmark, labels, report }: LoadedDataset): LoadedDataset {
  const toOpaque = new Map<string, string>();
  const sourceIds = new Map<string, string>();
  for (const m of benchmark.memories) {
    const opaque = `lme-${createHash('sha256').update(m.id).digest('hex').slice(0, 16)}`;
    if (sourceIds.has(opaque))
      throw new Error(`opaque id collision: ${m.id} and ${sourceIds.get(opaque)}`);
    toOpaque.set(m.id, opaque);
    sourceIds.set(opaque, m.id);
  }
  const rename = (id: string): string => {
    const opaque = toOpaque.get(id);
    if (opaque === undefined) throw new Error(`withOpaqueIds: ${id} is not a memory`);
    return opaque;
  };
  const memories = benchmark.memories
    .map((m) => ({ ...m, id: rename(m.id), bankId: rename(m.bankId) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const queries = benchmark.queries.map((q) => ({
    ...q,
    candidateIds: (q.candidateIds ?? []).map(rename).sort(),
  }));
  const renamed = new RelevanceLabels();
  for (const [q, m, g] of labels.toRows()) renamed.add(q, rename(m), g);
  return { benchmark: { ...benchmark, memories, queries }, labels: renamed, report, sourceIds };
}

/**
 * The text a session is retrieved by. User turns are joined by a space, as LongMemEval's own
 * retrieval code does; all turns are `role: content` lines.
 */
function sessionText(turns: readonly Turn[], policy: LongMemEvalOptions['textPolicy']): string {
  if (policy === 'all-turns') return turns.map((t) => `${t.role}: ${t.content}`).join('\n');
  return turns
    .filter((t) => t.role === 'user')
    .map((t) => t.content)
    .join(' ');
}

function isUserEvidence(turn: Turn): boolean {
  return turn.role === 'user' && turn.has_answer === true;
}

function isAssistantEvidence(turn: Turn): boolean {
  return turn.role === 'assistant' && turn.has_answer === true;
}

/** Same roles and contents turn by turn; `has_answer` is a label, not content. */
function sameContent(a: readonly Turn[], b: readonly Turn[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Turn;
    const y = b[i] as Turn;
    if (x.role !== y.role || x.content !== y.content) return false;
  }
  return true;
}

function stringField(value: unknown, key: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field: unknown = (value as Record<string, unknown>)[key];
  return typeof field === 'string' && field !== '' ? field : undefined;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
