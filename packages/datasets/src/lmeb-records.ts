import { join } from 'node:path';
import { z } from 'zod';
import { readJsonl, readLines, validateRecord, type LoadReport, type SourceFile } from '@bfe/core';
import { CANDIDATES, CORPUS } from './lmeb-layout.js';

// The records of an LMEB task folder, read and validated into a load report.
// (Package-internal: used by lmeb.ts.)

// LMEB coerces query ids with str(); doc and scene ids are coerced too, so that a numeric id in
// a JSONL file still matches the same id as it appears in the (always textual) qrels TSV.
const idSchema = z.union([z.string().min(1), z.number()]).transform(String);

const corpusRecordSchema = z.object({
  id: idSchema,
  title: z.string().nullish(),
  text: z.string().nullish(),
});

const queryRecordSchema = z.object({ id: idSchema, text: z.string() });

const candidatesRecordSchema = z.object({
  scene_id: idSchema,
  candidate_doc_ids: z.array(idSchema),
});

const qrelsRowSchema = z.object({
  'query-id': z.string().min(1),
  'corpus-id': z.string().min(1),
  score: z
    .string()
    .regex(/^\s*[+-]?\d+\s*$/, 'expected an integer')
    .transform((s) => Number.parseInt(s, 10)),
});

export interface QrelsRow {
  readonly docId: string;
  readonly score: number;
}

export interface CorpusDoc {
  readonly text: string;
  readonly title: string | undefined;
}

export async function readCorpus(
  root: string,
  textPolicy: 'lmeb' | 'trimmed',
  report: LoadReport,
  sources: SourceFile[],
): Promise<Map<string, CorpusDoc>> {
  const docs = new Map<string, CorpusDoc>();
  await readJsonlFile(root, CORPUS, report, sources, (value, line) => {
    const where = { file: CORPUS, record: `line ${line}` };
    const doc = validateRecord(corpusRecordSchema, value, where, report);
    if (doc === undefined) return;
    if (docs.has(doc.id)) {
      report.drop('duplicate-memory-id', doc.id, `${CORPUS} line ${line}`);
      return;
    }
    const joined = `${doc.title ?? ''} ${doc.text ?? ''}`;
    if (joined.trim() === '') {
      report.drop('empty-text', doc.id, `${CORPUS} line ${line}`);
      return;
    }
    const title = doc.title ?? undefined;
    docs.set(doc.id, { text: textPolicy === 'lmeb' ? joined : joined.trim(), title });
  });
  return docs;
}

/** Scene id → its candidate doc ids that are in the corpus, in file order, without repeats. */
export async function readCandidates(
  root: string,
  corpus: ReadonlyMap<string, CorpusDoc>,
  report: LoadReport,
  sources: SourceFile[],
): Promise<Map<string, string[]>> {
  const scenes = new Map<string, string[]>();
  await readJsonlFile(root, CANDIDATES, report, sources, (value, line) => {
    const where = { file: CANDIDATES, record: `line ${line}` };
    const rec = validateRecord(candidatesRecordSchema, value, where, report);
    if (rec === undefined) return;
    const scene = rec.scene_id;
    if (scenes.has(scene)) {
      // LMEB reads the file into a dict, so the last line of a scene wins; so it does here.
      report.repair(
        'duplicate-scene-id',
        scene,
        `${CANDIDATES} line ${line} replaces an earlier line`,
      );
    }
    const ids: string[] = [];
    const seen = new Set<string>();
    for (const id of rec.candidate_doc_ids) {
      if (!corpus.has(id)) {
        report.unresolved('unknown-candidate-doc', scene, `${id} is not in the corpus`);
      } else if (seen.has(id)) {
        report.repair('duplicate-candidate-id', scene, `${id} listed twice`);
      } else {
        seen.add(id);
        ids.push(id);
      }
    }
    scenes.set(scene, ids);
  });
  return scenes;
}

export interface RawQuery {
  readonly id: string;
  readonly text: string;
  readonly line: number;
}

export async function readQueries(
  root: string,
  file: string,
  report: LoadReport,
  sources: SourceFile[],
): Promise<RawQuery[]> {
  const out: RawQuery[] = [];
  await readJsonlFile(root, file, report, sources, (value, line) => {
    const q = validateRecord(queryRecordSchema, value, { file, record: `line ${line}` }, report);
    if (q !== undefined) out.push({ id: q.id, text: q.text, line });
  });
  return out;
}

/**
 * Query id → its qrels rows. LMEB's qrels have no header (`query-id<TAB>corpus-id<TAB>score`);
 * a header line is tolerated and reported. Rows with score ≤ 0 are counted here as
 * non-relevant; the caller leaves them out of the labels.
 */
export async function readQrels(
  root: string,
  file: string,
  report: LoadReport,
  sources: SourceFile[],
): Promise<Map<string, QrelsRow[]>> {
  const byQuery = new Map<string, QrelsRow[]>();
  let firstRow = true;
  const { sha256 } = await readLines(join(root, file), (text, line) => {
    if (text.trim() === '') return;
    const cols = text.split('\t');
    const isFirst = firstRow;
    firstRow = false;
    if (isFirst && isQrelsHeader(cols)) {
      report.repair('qrels-header', file, `line ${line} skipped as a header: ${text}`);
      return;
    }
    const value = { 'query-id': cols[0], 'corpus-id': cols[1], score: cols[2] };
    const row = validateRecord(qrelsRowSchema, value, { file, record: `line ${line}` }, report);
    if (row === undefined) return;
    const qid = row['query-id'];
    const docId = row['corpus-id'];
    if (cols.length > 3) report.repair('qrels-extra-columns', qid, `${file} line ${line}`);
    // Kept in the map so a query with only such rows is told apart from one with none.
    if (row.score <= 0) {
      report.drop('non-relevant-qrel', qid, `${docId} score ${row.score} (${file} line ${line})`);
    }
    const rows = byQuery.get(qid);
    if (rows === undefined) byQuery.set(qid, [{ docId, score: row.score }]);
    else {
      if (rows.some((r) => r.docId === docId)) {
        report.repair(
          'duplicate-qrel',
          qid,
          `${docId} again at ${file} line ${line}; larger score kept`,
        );
      }
      rows.push({ docId, score: row.score });
    }
  });
  sources.push({ name: file, sha256 });
  return byQuery;
}

function isQrelsHeader(cols: readonly string[]): boolean {
  const first = (cols[0] ?? '').trim().toLowerCase();
  const score = (cols[2] ?? '').trim().toLowerCase();
  return /^(query[-_ ]?id|qid)$/.test(first) || score === 'score';
}

/**
 * Reads a JSONL file of the task folder (streamed); a malformed line becomes a report issue
 * with its line number, never a crash. Records its SHA-256 in `sources`.
 */
async function readJsonlFile(
  root: string,
  file: string,
  report: LoadReport,
  sources: SourceFile[],
  onRecord: (value: unknown, line: number) => void,
): Promise<void> {
  const { sha256 } = await readJsonl(join(root, file), onRecord, (cause, line) => {
    const message = `malformed JSON: ${cause.message}`;
    report.issue({ file, record: `line ${line}`, path: '', message });
  });
  sources.push({ name: file, sha256 });
}
