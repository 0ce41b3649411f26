import { z } from 'zod';
import {
  ConfigError,
  DataError,
  LoadReport,
  RelevanceLabels,
  validateRecord,
  type LoadedDataset,
  type Memory,
  type Query,
  type SourceFile,
} from '@bfe/core';

/**
 * Options of the COVID-QA loader. `paragraphs` says how an article's context is cut into
 * memories: `line` (default) makes every newline-separated piece a paragraph; `blank-line`
 * cuts only at blank lines, which keeps hard-wrapped PDF text (article 2684) in whole paragraphs.
 *
 * @example
 * covidQaOptionsSchema.parse({}); // { paragraphs: 'line' }
 */
export const covidQaOptionsSchema = z.strictObject({
  paragraphs: z.enum(['line', 'blank-line']).default('line'),
});
/** Options as a caller may write them (defaults optional). */
export type CovidQaOptions = z.input<typeof covidQaOptionsSchema>;

const NAME = 'covidqa';
const SUBTASK = 'covidqa';
const SEPARATORS = { line: /\n/g, 'blank-line': /\n\s*\n/g } as const;

const fileSchema = z.object({ data: z.array(z.unknown()) });
const articleSchema = z.object({ title: z.string().optional(), paragraphs: z.array(z.unknown()) });
const paragraphSchema = z.object({
  context: z.string(),
  document_id: z.union([z.string().min(1), z.number()]).optional(),
  qas: z.array(z.unknown()),
});
const qaSchema = z.object({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  question: z.string(),
  answers: z.array(z.object({ text: z.string(), answer_start: z.number().int().nonnegative() })),
  is_impossible: z.boolean().optional(),
});

type Paragraph = z.infer<typeof paragraphSchema>;

/** A kept paragraph: its memory id and its `[start, end)` range in context `context`. */
interface Piece {
  readonly memoryId: string;
  readonly context: number;
  readonly start: number;
  readonly end: number;
}

/**
 * Parses COVID-QA (SQuAD format: `{ data: [{ title?, paragraphs: [{ context, document_id?,
 * qas: [{ id, question, answers: [{ text, answer_start }], is_impossible? }] }] }] }`) into the
 * canonical form. Pure: no I/O.
 *
 * - An article (one `data` entry) is a bank; its id is the `document_id` of its paragraphs,
 *   else `article-<index in data>`.
 * - A memory is one paragraph of the article's context (see `paragraphs`), id
 *   `<articleId>:p<k>` with `k` counting kept paragraphs from 0; empty pieces are dropped and
 *   counted (`empty-paragraph`); `meta` keeps the piece's `[start, end)` offsets.
 * - A query's candidates are its own article (`candidateBankIds`); its relevant memory is the
 *   paragraph holding each answer's start. An offset whose text does not match is relocated when
 *   the answer text occurs exactly once in the context (repaired `answer-offset-mismatch`),
 *   otherwise kept as given (unresolved `answer-offset-mismatch`). An answer running past its
 *   paragraph is reported as `answer-spans-paragraphs`.
 *
 * @example
 * const { benchmark, labels } = parseCovidQa(JSON.parse(text), {}, { name: 'covidqa_200423.json', sha256 });
 * benchmark.memories[0]; // { id: '630:p0', bankId: '630', text: 'Functional Genetic…', meta: { article: '630', context: 0, start: 0, end: 97 } }
 * benchmark.queries[0]; // { id: '262', text: '…?', candidateBankIds: ['630'], category: 'covidqa', meta: { article: '630' } }
 * labels.relevant('262'); // Map { '630:p6' => 1 }
 */
export function parseCovidQa(
  raw: unknown,
  options: CovidQaOptions,
  source: SourceFile,
): LoadedDataset {
  const parsedOptions = covidQaOptionsSchema.safeParse(options);
  if (!parsedOptions.success) {
    throw new ConfigError(`Invalid COVID-QA options:\n${z.prettifyError(parsedOptions.error)}`);
  }
  const opts = parsedOptions.data;
  const file = source.name;
  const top = fileSchema.safeParse(raw);
  if (!top.success) {
    throw new DataError(`${file}: not a SQuAD-format file:\n${z.prettifyError(top.error)}`, {
      file,
    });
  }

  const report = new LoadReport(NAME);
  const labels = new RelevanceLabels();
  const memories: Memory[] = [];
  const queries: Query[] = [];
  const articleIds = new Set<string>();
  const queryIds = new Set<string>();
  const articles = top.data.data;

  for (let a = 0; a < articles.length; a++) {
    const record = `data[${a}]`;
    const article = validateRecord(articleSchema, articles[a], { file, record }, report);
    if (article === undefined) continue;
    const paragraphs: Array<Paragraph | undefined> = [];
    for (let j = 0; j < article.paragraphs.length; j++) {
      const where = { file, record: `${record}.paragraphs[${j}]` };
      paragraphs.push(validateRecord(paragraphSchema, article.paragraphs[j], where, report));
    }

    const articleId = chooseArticleId(a, paragraphs, articleIds, report);
    articleIds.add(articleId);

    const pieces: Piece[] = [];
    for (let j = 0; j < paragraphs.length; j++) {
      const context = paragraphs[j]?.context;
      if (context === undefined) continue;
      for (const [start, end] of splitRanges(context, SEPARATORS[opts.paragraphs])) {
        const text = context.slice(start, end);
        if (text.trim() === '') {
          report.drop('empty-paragraph', articleId, `context ${j} [${start}, ${end})`);
          continue;
        }
        const memoryId = `${articleId}:p${pieces.length}`;
        pieces.push({ memoryId, context: j, start, end });
        const meta = { article: articleId, context: j, start, end };
        memories.push({ id: memoryId, bankId: articleId, text, meta });
      }
    }

    for (let j = 0; j < paragraphs.length; j++) {
      const paragraph = paragraphs[j];
      if (paragraph === undefined) continue;
      for (let k = 0; k < paragraph.qas.length; k++) {
        const where = { file, record: `${record}.paragraphs[${j}].qas[${k}]` };
        const qa = validateRecord(qaSchema, paragraph.qas[k], where, report);
        if (qa === undefined) continue;
        if (queryIds.has(qa.id)) {
          report.drop('duplicate-query-id', qa.id, where.record);
          continue;
        }
        queryIds.add(qa.id);
        if (qa.question.trim() === '') {
          report.drop('empty-text', qa.id, where.record);
          continue;
        }
        if (qa.is_impossible === true || qa.answers.length === 0) {
          const why = qa.is_impossible === true ? 'is_impossible' : 'no answers';
          report.drop('no-resolvable-evidence', qa.id, why);
          continue;
        }
        const relevant = new Set<string>();
        for (const answer of qa.answers) {
          const start = answerStart(
            qa.id,
            paragraph.context,
            answer.text,
            answer.answer_start,
            report,
          );
          const memoryId = paragraphOf(qa.id, pieces, j, start, answer.text.length, report);
          if (memoryId !== undefined) relevant.add(memoryId);
        }
        if (relevant.size === 0) {
          report.drop('no-resolvable-evidence', qa.id, 'no answer lies in a kept paragraph');
          continue;
        }
        for (const memoryId of relevant) labels.add(qa.id, memoryId, 1);
        queries.push({
          id: qa.id,
          text: qa.question,
          candidateBankIds: [articleId],
          category: SUBTASK,
          meta: { article: articleId },
        });
      }
    }
  }

  const benchmark = {
    name: NAME,
    options: { paragraphs: opts.paragraphs },
    memories,
    queries,
    subtasks: [SUBTASK],
    sources: [source],
  };
  return { benchmark, labels, report };
}

/**
 * The article's bank id: its paragraphs' `document_id` (the first one when they disagree,
 * reported), else its index. A repeated id gets the index appended so memory ids stay unique.
 */
function chooseArticleId(
  index: number,
  paragraphs: ReadonlyArray<Paragraph | undefined>,
  used: ReadonlySet<string>,
  report: LoadReport,
): string {
  let id: string | undefined;
  for (const p of paragraphs) {
    if (p?.document_id === undefined) continue;
    const docId = String(p.document_id);
    if (id === undefined) id = docId;
    else if (docId !== id) {
      report.unresolved(
        'conflicting-document-id',
        id,
        `data[${index}] also has document_id ${docId}`,
      );
    }
  }
  id ??= `article-${index}`;
  if (!used.has(id)) return id;
  const unique = `${id}~${index}`;
  report.repair('duplicate-article-id', unique, `data[${index}] repeats article id ${id}`);
  return unique;
}

/** `[start, end)` of every piece of `text` between matches of `separator` (empty ones too). */
function splitRanges(text: string, separator: RegExp): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let start = 0;
  for (const m of text.matchAll(separator)) {
    ranges.push([start, m.index]);
    start = m.index + m[0].length;
  }
  ranges.push([start, text.length]);
  return ranges;
}

/**
 * The answer's start offset: as given when the context holds the answer text there; else the
 * text's one occurrence in the context (a repair); else, when it occurs zero or several times,
 * as given (unresolved), since the given offset is then the best evidence of where it is.
 */
function answerStart(
  queryId: string,
  context: string,
  text: string,
  start: number,
  report: LoadReport,
): number {
  if (context.slice(start, start + text.length) === text) return start;
  const first = text === '' ? -1 : context.indexOf(text);
  const occurrences = first === -1 ? 0 : context.indexOf(text, first + 1) === -1 ? 1 : 2;
  if (occurrences === 1) {
    report.repair('answer-offset-mismatch', queryId, `answer_start ${start} → ${first}`);
    return first;
  }
  const found = occurrences === 0 ? 'not found in the context' : 'found several times';
  report.unresolved('answer-offset-mismatch', queryId, `answer_start ${start}: text ${found}`);
  return start;
}

/**
 * The memory holding offset `start` of context `context`. A start on a dropped piece (a blank
 * or a separator) moves to the next kept paragraph if the answer reaches it.
 */
function paragraphOf(
  queryId: string,
  pieces: readonly Piece[],
  context: number,
  start: number,
  length: number,
  report: LoadReport,
): string | undefined {
  let piece: Piece | undefined;
  for (const p of pieces) {
    if (p.context === context && p.end > start) {
      piece = p;
      break;
    }
  }
  const end = start + Math.max(length, 1);
  if (piece === undefined || piece.start >= end) {
    report.unresolved(
      'answer-outside-paragraphs',
      queryId,
      `offset ${start} is in no kept paragraph`,
    );
    return undefined;
  }
  if (piece.start > start) {
    report.repair(
      'answer-start-between-paragraphs',
      queryId,
      `offset ${start} → ${piece.memoryId}`,
    );
  } else if (start + length > piece.end) {
    report.unresolved(
      'answer-spans-paragraphs',
      queryId,
      `labelled ${piece.memoryId}, where it starts`,
    );
  }
  return piece.memoryId;
}
