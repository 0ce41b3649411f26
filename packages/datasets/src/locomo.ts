import { z } from 'zod';
import { DataError, LoadReport, RelevanceLabels, validateRecord } from '@bfe/core';
import type { LoadedDataset, Memory, Query, SourceFile } from '@bfe/core';

/**
 * LoCoMo's QA categories, indexed by `code - 1` (1 multi-hop … 5 adversarial): the dataset's
 * declared order, which is also the order of `benchmark.subtasks`.
 */
export const LOCOMO_CATEGORY_NAMES = [
  'multi-hop',
  'temporal',
  'open-domain',
  'single-hop',
  'adversarial',
] as const;

/**
 * Options of {@link parseLocomo}. Category 5 (adversarial) is left out by default because its
 * questions are unanswerable from the conversation by design.
 *
 * @example
 * locomoOptionsSchema.parse({});
 * // { granularity: 'turn', categories: [1, 2, 3, 4],
 * //   includeImageCaptions: true, repairEvidence: true }
 */
export const locomoOptionsSchema = z.strictObject({
  /** `turn`: a memory is one turn; `session`: a memory is one session, its turns joined. */
  granularity: z.enum(['turn', 'session']).default('turn'),
  /** Numeric LoCoMo category codes to keep (1 multi-hop … 5 adversarial). */
  categories: z.array(z.int().min(1).max(5)).min(1).default([1, 2, 3, 4]),
  /** Append an image turn's BLIP caption to its text as ` [image: caption]`. */
  includeImageCaptions: z.boolean().default(true),
  /**
   * Rewrite malformed evidence ids (`'D:11:26'`, `'D30:05'`, `'D8:6; D9:17'`); when off, only
   * exact `dia_id` matches count.
   */
  repairEvidence: z.boolean().default(true),
});
/** Parsed {@link locomoOptionsSchema}. */
export type LocomoOptions = z.infer<typeof locomoOptionsSchema>;

const SESSION_KEY = /^session_(\d+)$/;
const DATE_KEY = /^session_(\d+)_date_time$/;
// `D<session>:<turn>`, tolerating the stray colon of `D:11:26` and leading zeros (`D30:05`).
const EVIDENCE_ID = /^D(:?)(\d+):(\d+)$/;
const CANONICAL_ID = /^D[1-9]\d*:[1-9]\d*$/;

// Only the fields the parser uses are validated; everything else (answers, summaries,
// observations, image urls) is ignored on purpose, so labels other than evidence never enter.
const sampleSchema = z.object({
  sample_id: z.string().min(1),
  conversation: z.record(z.string(), z.unknown()).superRefine((conversation, ctx) => {
    for (const [key, value] of Object.entries(conversation)) {
      if (SESSION_KEY.test(key) && !Array.isArray(value)) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'expected an array of turns' });
      } else if (DATE_KEY.test(key) && typeof value !== 'string') {
        ctx.addIssue({ code: 'custom', path: [key], message: 'expected a date string' });
      }
    }
  }),
  qa: z.array(z.unknown()),
});

const turnSchema = z.object({
  speaker: z.string(),
  dia_id: z.string().min(1),
  text: z.string(),
  blip_caption: z.string().optional(),
});
type Turn = z.infer<typeof turnSchema>;

const qaSchema = z.object({
  question: z.string(),
  evidence: z.array(z.string()),
  category: z.int(),
});

interface SessionTurn {
  readonly diaId: string;
  readonly text: string;
}

/**
 * Parses LoCoMo (`locomo10.json`: an array of samples) into the canonical form. Pure: the caller
 * reads the file. Memories are turns (`${sample_id}:${dia_id}`) or sessions
 * (`${sample_id}:session_${n}`), each in the bank `sample_id`; a query (`${sample_id}:q${i}`,
 * `i` its index in `qa`) ranks its own conversation, and its relevant memories are its evidence
 * turns (or their sessions). Bad records, repairs, unresolved evidence and drops are recorded
 * per item in the report; only a top level that is not an array throws.
 *
 * @throws {DataError} when `raw` is not an array.
 * @example
 * const { benchmark, labels, report } = parseLocomo(json, locomoOptionsSchema.parse({}), source);
 * benchmark.memories[0];
 * // { id: 'conv-26:D1:1', bankId: 'conv-26', text: 'Caroline: Hey Mel! …',
 * //   meta: { speaker: 'Caroline', session: 1, sessionDate: '1:56 pm on 8 May, 2023',
 * //           diaId: 'D1:1' } }
 * benchmark.queries.length; // 1536
 * labels.relevant('conv-26:q0'); // Map { 'conv-26:D1:3' => 1 }
 * report.toJSON().repaired; // { 'evidence-split-list': 4, 'evidence-extra-colon': 1, … }
 */
export function parseLocomo(
  raw: unknown,
  options: LocomoOptions,
  source: SourceFile,
): LoadedDataset {
  const file = source.name;
  if (!Array.isArray(raw)) {
    const message = `${file}: expected a JSON array of LoCoMo samples, got ${kindOf(raw)}`;
    throw new DataError(message, { file });
  }
  const report = new LoadReport('locomo');
  const labels = new RelevanceLabels();
  const memories: Memory[] = [];
  const queries: Query[] = [];
  const included = new Set(options.categories);
  const sampleIds = new Set<string>();

  for (let s = 0; s < raw.length; s++) {
    const rawSample: unknown = raw[s];
    const sample = validateRecord(
      sampleSchema,
      rawSample,
      { file, record: stringField(rawSample, 'sample_id') ?? `[${s}]` },
      report,
    );
    if (sample === undefined) continue;
    const sampleId = sample.sample_id;
    if (sampleIds.has(sampleId)) {
      // Its memory ids would collide with the first sample's, and its evidence would resolve there.
      report.drop('duplicate-sample-id', sampleId, `sample [${s}] repeats this sample_id`);
      continue;
    }
    sampleIds.add(sampleId);

    // dia_id → memory id, for the turns that became (part of) a memory.
    const memoryOf = new Map<string, string>();
    const diaIds = new Set<string>();
    for (const n of sessionNumbers(sample.conversation)) {
      const sessionKey = `session_${n}`;
      const sessionId = `${sampleId}:${sessionKey}`;
      const date = sample.conversation[`${sessionKey}_date_time`];
      const sessionDate = typeof date === 'string' ? date : null;
      const rawTurns = sample.conversation[sessionKey];
      if (!Array.isArray(rawTurns) || rawTurns.length === 0) {
        // conv-26 declares dates up to session 35 but has turns for 19 sessions only.
        const why = rawTurns === undefined ? 'has a date but no turns' : 'has an empty turn list';
        report.drop('no-turns', sessionId, `${sessionKey} ${why}`);
        continue;
      }
      const turns: SessionTurn[] = [];
      for (let t = 0; t < rawTurns.length; t++) {
        const rawTurn: unknown = rawTurns[t];
        const diaId = stringField(rawTurn, 'dia_id');
        const record = `${sampleId}:${diaId ?? `${sessionKey}[${t}]`}`;
        const turn = validateRecord(turnSchema, rawTurn, { file, record }, report);
        if (turn === undefined) continue;
        const memoryId = `${sampleId}:${turn.dia_id}`;
        if (diaIds.has(turn.dia_id)) {
          report.drop(
            'duplicate-memory-id',
            memoryId,
            `${sessionKey}[${t}] repeats ${turn.dia_id}`,
          );
          continue;
        }
        diaIds.add(turn.dia_id);
        const text = turnText(turn, options.includeImageCaptions);
        if (text === undefined) {
          report.drop('empty-text', memoryId, `${sessionKey}[${t}] has no text`);
          continue;
        }
        turns.push({ diaId: turn.dia_id, text });
        if (options.granularity === 'turn') {
          memories.push({
            id: memoryId,
            bankId: sampleId,
            text,
            meta: { speaker: turn.speaker, session: n, sessionDate, diaId: turn.dia_id },
          });
          memoryOf.set(turn.dia_id, memoryId);
        }
      }
      if (options.granularity === 'session') {
        if (turns.length === 0) {
          report.drop('empty-text', sessionId, `no turn of ${sessionKey} has text`);
          continue;
        }
        memories.push({
          id: sessionId,
          bankId: sampleId,
          text: turns.map((t) => t.text).join('\n'),
          meta: { session: n, sessionDate, diaIds: turns.map((t) => t.diaId) },
        });
        for (const t of turns) memoryOf.set(t.diaId, sessionId);
      }
    }

    for (let i = 0; i < sample.qa.length; i++) {
      const id = `${sampleId}:q${i}`;
      const qa = validateRecord(qaSchema, sample.qa[i], { file, record: id }, report);
      if (qa === undefined) continue;
      const category = LOCOMO_CATEGORY_NAMES[qa.category - 1];
      if (category === undefined) {
        report.drop('unknown-category', id, `category ${qa.category}`);
        continue;
      }
      if (!included.has(qa.category)) {
        report.drop('excluded-category', id, `category ${qa.category} (${category}) not requested`);
        continue;
      }
      if (qa.question.trim() === '') {
        report.drop('empty-text', id, 'empty question');
        continue;
      }
      if (qa.evidence.length === 0) {
        report.drop('no-evidence', id, 'empty evidence list');
        continue;
      }
      const relevant = resolveEvidence(qa.evidence, id, memoryOf, options.repairEvidence, report);
      if (relevant.size === 0) {
        report.drop('no-resolvable-evidence', id, qa.evidence.map((e) => `'${e}'`).join(', '));
        continue;
      }
      queries.push({
        id,
        text: qa.question,
        candidateBankIds: [sampleId],
        category,
        meta: { locomoCategory: qa.category },
      });
      for (const memoryId of relevant) labels.add(id, memoryId);
    }
  }

  const used = new Set(queries.map((q) => q.category));
  const subtasks = LOCOMO_CATEGORY_NAMES.filter((name) => used.has(name));
  return {
    benchmark: {
      name: 'locomo',
      options: {
        granularity: options.granularity,
        // Core's options type holds strings, not numbers: record the names, in declared order.
        categories: LOCOMO_CATEGORY_NAMES.filter((_, c) => included.has(c + 1)),
        includeImageCaptions: options.includeImageCaptions,
        repairEvidence: options.repairEvidence,
      },
      memories,
      queries,
      subtasks,
      sources: [source],
    },
    labels,
    report,
  };
}

/**
 * Resolves a query's evidence strings to memory ids, reporting every repair and every id that
 * does not resolve. With `repair` off only exact `dia_id` matches count.
 */
function resolveEvidence(
  evidence: readonly string[],
  queryId: string,
  memoryOf: ReadonlyMap<string, string>,
  repair: boolean,
  report: LoadReport,
): Set<string> {
  const relevant = new Set<string>();
  const seen = new Set<string>();
  for (const raw of evidence) {
    const diaIds = repair && !memoryOf.has(raw) ? repairEvidenceId(raw, queryId, report) : [raw];
    for (const diaId of diaIds) {
      if (seen.has(diaId)) {
        report.repair('evidence-duplicate', queryId, `${diaId} listed twice; counted once`);
        continue;
      }
      seen.add(diaId);
      const memoryId = memoryOf.get(diaId);
      if (memoryId !== undefined) relevant.add(memoryId);
      else if (CANONICAL_ID.test(diaId)) report.unresolved('evidence-unknown-id', queryId, diaId);
      else report.unresolved('evidence-malformed', queryId, `'${diaId}'`);
    }
  }
  return relevant;
}

/**
 * Splits a list written as one string (`'D8:6; D9:17'`, `'D1:3 D1:4'`) and canonicalises each id
 * (`'D:11:26'` → `D11:26`, `'D30:05'` → `D30:5`). Ids it cannot parse come back unchanged, so
 * that the caller reports them as unresolved.
 */
function repairEvidenceId(raw: string, queryId: string, report: LoadReport): string[] {
  const tokens = raw.split(/[\s;,]+/).filter((token) => token !== '');
  if (tokens.length > 1) {
    report.repair('evidence-split-list', queryId, `'${raw}' → ${tokens.join(', ')}`);
  }
  const out: string[] = [];
  for (const token of tokens) {
    const m = EVIDENCE_ID.exec(token);
    if (m === null) {
      out.push(token);
      continue;
    }
    const session = m[2] ?? '';
    const turn = m[3] ?? '';
    const canonical = `D${Number(session)}:${Number(turn)}`;
    if (m[1] === ':') report.repair('evidence-extra-colon', queryId, `'${token}' → ${canonical}`);
    if (/^0\d/.test(session) || /^0\d/.test(turn)) {
      report.repair('evidence-leading-zero', queryId, `'${token}' → ${canonical}`);
    }
    out.push(canonical);
  }
  // An empty or blank string has no token: keep it so that it is reported, not lost.
  return out.length === 0 ? [raw] : out;
}

/** `speaker: text`, with ` [image: caption]` appended for image turns when asked. */
function turnText(turn: Turn, includeImageCaptions: boolean): string | undefined {
  const caption = includeImageCaptions ? (turn.blip_caption?.trim() ?? '') : '';
  if (turn.text.trim() === '' && caption === '') return undefined;
  if (caption === '') return `${turn.speaker}: ${turn.text}`;
  if (turn.text.trim() === '') return `${turn.speaker}: [image: ${caption}]`;
  return `${turn.speaker}: ${turn.text} [image: ${caption}]`;
}

/** Session numbers that have turns or a date, ascending (object key order is not numeric). */
function sessionNumbers(conversation: Record<string, unknown>): number[] {
  const numbers = new Set<number>();
  for (const key of Object.keys(conversation)) {
    const m = SESSION_KEY.exec(key) ?? DATE_KEY.exec(key);
    if (m !== null) numbers.add(Number(m[1]));
  }
  return [...numbers].sort((a, b) => a - b);
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
