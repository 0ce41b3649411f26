import { z } from 'zod';

const TEXT_POLICIES = ['user-turns', 'all-turns'] as const;
const RELEVANCE_POLICIES = ['has-answer', 'answer-session-ids'] as const;

/**
 * The two retrieval protocols a LongMemEval file is read under, as the text and relevance
 * policies each one fixes.
 *
 * - `longmemeval`: LongMemEval's own session-level retrieval protocol
 *   (`src/retrieval/run_retrieval.py`). A session is retrieved by its user turns, and is relevant
 *   when one of its user turns carries `has_answer`. A question whose evidence sits only in
 *   assistant turns (most `single-session-assistant` questions) has nothing to find and is
 *   dropped as `assistant-evidence-only`: 418 questions on the 498-question S file.
 * - `paper`: the paper's protocol (Appendix F: "470 non-abstention LongMemEval questions").
 *   A session is retrieved by its whole text, user and assistant turns, and every session in
 *   `answer_session_ids` is relevant, so every non-abstention question with evidence is kept:
 *   468 on the S file, which lacks two of the 500 questions (`7e00a6cb` and `gpt4_7a0daae1`,
 *   both non-abstention; the oracle file has them and gives 470).
 *
 * @example
 * LONGMEMEVAL_PROTOCOLS.paper; // { textPolicy: 'all-turns', relevance: 'answer-session-ids' }
 */
export const LONGMEMEVAL_PROTOCOLS = {
  longmemeval: { textPolicy: 'user-turns', relevance: 'has-answer' },
  paper: { textPolicy: 'all-turns', relevance: 'answer-session-ids' },
} as const satisfies Record<
  string,
  {
    textPolicy: (typeof TEXT_POLICIES)[number];
    relevance: (typeof RELEVANCE_POLICIES)[number];
  }
>;

/** A protocol name: a key of {@link LONGMEMEVAL_PROTOCOLS}. */
export type LongMemEvalProtocol = keyof typeof LONGMEMEVAL_PROTOCOLS;

const PROTOCOL_NAMES = Object.keys(LONGMEMEVAL_PROTOCOLS) as [
  LongMemEvalProtocol,
  ...LongMemEvalProtocol[],
];

/**
 * Options of `parseLongMemEval`. Unset, they are LongMemEval's own protocol (`protocol:
 * 'longmemeval'`), so a config that names no protocol loads what it always loaded.
 *
 * - `protocol` fixes `textPolicy` and `relevance` ({@link LONGMEMEVAL_PROTOCOLS}); writing
 *   either beside it with another value is an error, not a silent override.
 * - Without `protocol`, `textPolicy` and `relevance` may be set one by one (their defaults are
 *   the `longmemeval` protocol's).
 *
 * The parsed options carry the resolved `textPolicy` and `relevance`, and `protocol`: the
 * protocol they amount to, however they were written (unset for a mix that no protocol names).
 *
 * @example
 * longMemEvalOptionsSchema.parse({});
 * // { protocol: 'longmemeval', textPolicy: 'user-turns', relevance: 'has-answer', ids: 'opaque' }
 * longMemEvalOptionsSchema.parse({ protocol: 'paper' });
 * // { protocol: 'paper', textPolicy: 'all-turns', relevance: 'answer-session-ids', ids: 'opaque' }
 */
export const longMemEvalOptionsSchema = z
  .strictObject({
    /** A named protocol: `longmemeval` (LongMemEval's own) or `paper` (the paper's 470). */
    protocol: z.enum(PROTOCOL_NAMES).optional(),
    /** `user-turns`: user contents joined by a space; `all-turns`: `role: content` lines. */
    textPolicy: z.enum(TEXT_POLICIES).optional(),
    /**
     * `has-answer`: answer sessions with a user turn marked `has_answer` (LongMemEval's own);
     * `answer-session-ids`: every answer session of the question (the paper's and LMEB's).
     */
    relevance: z.enum(RELEVANCE_POLICIES).optional(),
    /**
     * `opaque` (default): memory and bank ids are `lme-` + 16 hex digits of the SHA-256 of the
     * session id, memories and candidates sorted by that id. LongMemEval names every answer
     * session `answer_…` and no other, and lists haystacks in an order where answer sessions sit
     * at telling positions, so source ids or order would let any id-based tie-break or lookup
     * see gold. `source` keeps the session ids (for cross-checks against other tools only).
     */
    ids: z.enum(['opaque', 'source']).default('opaque'),
    /**
     * Keep only the first N questions, in file order, that pass the loader's checks (the
     * reproduction notes' `--max-queries 100`); later questions are dropped as
     * `beyond-max-queries` and their sessions never read. Unset: every question.
     */
    maxQueries: z.int().positive().optional(),
    /**
     * `drop` (unset): abstention questions (`_abs`) are dropped, as LongMemEval's retrieval
     * does. `only`: they alone are kept, their `answer_session_ids` (sessions that touch the
     * question but do not answer it) as labels — for measuring whether a score can say
     * "nothing relevant here", never for ranking metrics. Unset keeps a config's hash.
     */
    abstention: z.enum(['drop', 'only']).optional(),
  })
  .superRefine((o, ctx) => {
    if (o.protocol === undefined) return;
    const fixed = LONGMEMEVAL_PROTOCOLS[o.protocol];
    for (const key of ['textPolicy', 'relevance'] as const) {
      const value = o[key];
      if (value === undefined || value === fixed[key]) continue;
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message:
          `protocol '${o.protocol}' fixes ${key} '${fixed[key]}'; drop ${key} '${value}' ` +
          `or drop protocol to set ${key} on its own`,
      });
    }
  })
  .transform(({ protocol, textPolicy, relevance, ...rest }) => {
    const base = LONGMEMEVAL_PROTOCOLS[protocol ?? 'longmemeval'];
    const resolved = {
      textPolicy: textPolicy ?? base.textPolicy,
      relevance: relevance ?? base.relevance,
    };
    const named = PROTOCOL_NAMES.find(
      (p) =>
        LONGMEMEVAL_PROTOCOLS[p].textPolicy === resolved.textPolicy &&
        LONGMEMEVAL_PROTOCOLS[p].relevance === resolved.relevance,
    );
    return { ...(named === undefined ? {} : { protocol: named }), ...resolved, ...rest };
  });

/** Options as written (every field optional), the input of {@link longMemEvalOptionsSchema}. */
export type LongMemEvalOptionsInput = z.input<typeof longMemEvalOptionsSchema>;
/** Parsed {@link longMemEvalOptionsSchema}: `textPolicy` and `relevance` resolved. */
export type LongMemEvalOptions = z.output<typeof longMemEvalOptionsSchema>;
