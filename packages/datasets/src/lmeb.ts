import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import {
  ConfigError,
  DataMissingError,
  LoadReport,
  RelevanceLabels,
  validateRecord,
  type LoadedDataset,
  type Memory,
  type Query,
  type SourceFile,
} from '@bfe/core';

/**
 * Options of an LMEB-format folder (`lmeb:<folder>`).
 *
 * - `layout`: `auto` detects it from the files present (a root `queries.jsonl` means a
 *   document task, subset folders holding `queries.jsonl` mean a dialogue task).
 * - `subsets`: dialogue subsets to load, in this order (default: every subset folder, sorted).
 * - `missingScene`: what to do with a query whose scene is not in `candidates.jsonl`; LMEB keeps
 *   the whole corpus as its candidates (`all-corpus`), `drop` leaves the query out.
 * - `textPolicy`: `lmeb` keeps LMEB's exact document text `(title or "") + " " + (text or "")`,
 *   leading space included; `trimmed` trims it.
 *
 * @example
 * lmebOptionsSchema.parse({}); // { layout: 'auto', missingScene: 'all-corpus', textPolicy: 'lmeb' }
 */
export const lmebOptionsSchema = z.strictObject({
  layout: z.enum(['auto', 'dialogue', 'document']).default('auto'),
  subsets: z.array(z.string().min(1)).min(1).optional(),
  missingScene: z.enum(['all-corpus', 'drop']).default('all-corpus'),
  textPolicy: z.enum(['lmeb', 'trimmed']).default('lmeb'),
});
/** Options as a caller may write them (defaults optional). */
export type LmebOptions = z.input<typeof lmebOptionsSchema>;

const CORPUS = 'corpus.jsonl';
const QUERIES = 'queries.jsonl';
const QRELS = 'qrels.tsv';
const CANDIDATES = 'candidates.jsonl';

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

type Layout = 'dialogue' | 'document';

/** One subtask: where its queries and qrels are, relative to the task folder. */
interface Subset {
  readonly name: string;
  readonly queriesFile: string;
  readonly qrelsFile: string;
}

interface QrelsRow {
  readonly docId: string;
  readonly score: number;
}

/**
 * Loads one LMEB task folder, as LMEB (KaLM-Embedding/LMEB, `LocalRetrieval.py` and
 * `SubsetRetrieval.py`) lays it out:
 *
 * - dialogue tasks (LoCoMo, LongMemEval, REALTALK, TMD…): `corpus.jsonl` and `candidates.jsonl`
 *   at the root, one folder per subset with `queries.jsonl` and `qrels.tsv`; a query's scene is
 *   the first two `_`-separated parts of its id;
 * - document tasks (CovidQA, PeerQA, MLDR…): all four files in the folder; a query's scene is
 *   its own id, and the folder is the only subtask.
 *
 * A query's candidates are its scene's `candidate_doc_ids` that exist in the corpus (METHOD.md
 * §6: rank each query's own candidate set only). A memory's bank is the scene whose candidate
 * list holds it; a document in several scenes' lists gets the lexicographically first of them
 * (a query of any other of those scenes then links that bank to its own, so the split's
 * connected components keep the scenes that share it together); a document in no list gets the
 * folder name. Qrels go into the labels only; rows with score ≤ 0 are counted as non-relevant.
 *
 * @example
 * const { benchmark, labels, report } = await loadLmebFolder('/data/LMEB/Dialogue/LoCoMo');
 * benchmark.name; // 'lmeb:LoCoMo'
 * benchmark.subtasks; // ['adversarial', 'multi_hop', 'open_domain', 'single_hop', 'temporal_reasoning']
 * benchmark.queries[0]; // { id, text, candidateIds: string[], category: 'adversarial', meta: { scene } }
 */
export async function loadLmebFolder(
  dir: string,
  options: LmebOptions = {},
): Promise<LoadedDataset> {
  const parsed = lmebOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new ConfigError(`Invalid LMEB options:\n${z.prettifyError(parsed.error)}`);
  }
  const opts = parsed.data;
  const root = resolve(dir);
  const folder = basename(root);
  const name = `lmeb:${folder}`;
  if (!(await isDirectory(root))) {
    throw new DataMissingError(`LMEB folder ${root} does not exist.`, {
      suggestion:
        'Pass lmeb:<folder> with the path of one LMEB task folder (e.g. .../Dialogue/LoCoMo).',
    });
  }

  const layout = await resolveLayout(root, opts.layout);
  const subsets = await resolveSubsets(root, folder, layout, opts.subsets);
  // Every required file is checked before any is read, so a missing one fails fast, by name.
  const required = [CORPUS, CANDIDATES];
  for (const s of subsets) required.push(s.queriesFile, s.qrelsFile);
  for (const file of required) await requireFile(root, file);

  const report = new LoadReport(name);
  const sources: SourceFile[] = [];
  const labels = new RelevanceLabels();

  const corpus = await readCorpus(root, opts.textPolicy, report, sources);
  const scenes = await readCandidates(root, corpus, report, sources);
  const memories = buildMemories(corpus, scenes, folder);
  const allDocIds = memories.map((m) => m.id);

  const queries: Query[] = [];
  const subtasks: string[] = [];
  const usedQueryIds = new Set<string>();
  for (const subset of subsets) {
    const raw = await readQueries(root, subset.queriesFile, report, sources);
    const qrels = await readQrels(root, subset.qrelsFile, report, sources);
    const before = queries.length;
    const seen = new Set<string>();
    for (const q of raw) {
      if (seen.has(q.id)) {
        report.drop('duplicate-query-id', q.id, `${subset.queriesFile} line ${q.line}`);
        continue;
      }
      seen.add(q.id);
      if (q.text.trim() === '') {
        report.drop('empty-text', q.id, `${subset.queriesFile} line ${q.line}`);
        continue;
      }
      // LMEB scores each subset on its own, so one id may recur in two subsets; ours must be
      // unique across the benchmark, so a later recurrence is prefixed with its subset.
      let id = q.id;
      if (usedQueryIds.has(id)) {
        id = `${subset.name}/${q.id}`;
        if (usedQueryIds.has(id)) {
          report.drop('duplicate-query-id', q.id, `${subset.queriesFile} line ${q.line}`);
          continue;
        }
        report.repair('query-id-prefixed', id, `${q.id} is also a query of an earlier subset`);
      }

      const scene = layout === 'dialogue' ? q.id.split('_').slice(0, 2).join('_') : q.id;
      let candidateIds = scenes.get(scene);
      if (candidateIds === undefined) {
        if (opts.missingScene === 'drop') {
          report.drop('scene-not-in-candidates', id, `scene ${scene}`);
          continue;
        }
        report.unresolved('scene-not-in-candidates', id, `scene ${scene}: whole corpus kept`);
        candidateIds = allDocIds;
      }
      if (candidateIds.length === 0) {
        report.drop('no-candidates', id, `scene ${scene} has no candidate in the corpus`);
        continue;
      }

      const rows = qrels.get(q.id) ?? [];
      const relevant: QrelsRow[] = [];
      for (const row of rows) {
        if (row.score <= 0) continue; // counted as non-relevant when read
        if (corpus.has(row.docId)) relevant.push(row);
        else report.unresolved('qrels-unknown-doc', id, `${row.docId} is not in the corpus`);
      }
      if (relevant.length === 0) {
        const why = rows.length === 0 ? 'no qrels' : 'no qrels with score > 0 to a corpus document';
        report.drop('no-resolvable-evidence', id, why);
        continue;
      }
      const candidateSet = new Set(candidateIds);
      for (const row of relevant) {
        // Kept, as LMEB keeps it: the query's recall is capped by a memory it cannot rank.
        if (!candidateSet.has(row.docId)) {
          report.unresolved('relevant-not-in-candidates', id, `${row.docId} (scene ${scene})`);
        }
        labels.add(id, row.docId, row.score);
      }
      usedQueryIds.add(id);
      queries.push({ id, text: q.text, candidateIds, category: subset.name, meta: { scene } });
    }
    for (const [qid, rows] of qrels) {
      if (!seen.has(qid)) {
        report.unresolved('qrels-unknown-query', qid, `${subset.qrelsFile}: ${rows.length} row(s)`);
      }
    }
    // A subtask without queries would average as NaN (METHOD.md §6), so it is not declared.
    if (queries.length > before) subtasks.push(subset.name);
    else report.drop('empty-subtask', subset.name, 'no query survived loading');
  }

  const benchmark = {
    name,
    options: {
      layout,
      subsets: subsets.map((s) => s.name),
      missingScene: opts.missingScene,
      textPolicy: opts.textPolicy,
    },
    memories,
    queries,
    subtasks,
    sources,
  };
  return { benchmark, labels, report };
}

async function resolveLayout(root: string, requested: Layout | 'auto'): Promise<Layout> {
  if (requested !== 'auto') return requested;
  if (await isFile(join(root, QUERIES))) return 'document';
  if ((await findSubsetFolders(root)).length > 0) return 'dialogue';
  throw new DataMissingError(
    `LMEB folder ${root} has no ${QUERIES}, neither at its root (document task) nor in a subset folder (dialogue task).`,
  );
}

async function resolveSubsets(
  root: string,
  folder: string,
  layout: Layout,
  requested: readonly string[] | undefined,
): Promise<Subset[]> {
  if (layout === 'document') {
    if (requested !== undefined) {
      throw new ConfigError(
        `LMEB option 'subsets' applies to dialogue tasks only; ${root} is loaded as a document task.`,
      );
    }
    return [{ name: folder, queriesFile: QUERIES, qrelsFile: QRELS }];
  }
  const names = requested ?? (await findSubsetFolders(root));
  if (names.length === 0) {
    throw new DataMissingError(
      `LMEB dialogue folder ${root} has no subset folder with ${QUERIES}.`,
    );
  }
  if (new Set(names).size !== names.length) {
    throw new ConfigError(`LMEB option 'subsets' lists a subset twice: ${names.join(', ')}`);
  }
  return names.map((n) => ({
    name: n,
    queriesFile: `${n}/${QUERIES}`,
    qrelsFile: `${n}/${QRELS}`,
  }));
}

/** Subfolders holding a `queries.jsonl`, sorted so the subtask order does not depend on the OS. */
async function findSubsetFolders(root: string): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true });
  const names: string[] = [];
  for (const e of entries) {
    if (e.isDirectory() && (await isFile(join(root, e.name, QUERIES)))) names.push(e.name);
  }
  return names.sort();
}

interface CorpusDoc {
  readonly text: string;
  readonly title: string | undefined;
}

async function readCorpus(
  root: string,
  textPolicy: 'lmeb' | 'trimmed',
  report: LoadReport,
  sources: SourceFile[],
): Promise<Map<string, CorpusDoc>> {
  const docs = new Map<string, CorpusDoc>();
  await readJsonl(root, CORPUS, report, sources, (value, line) => {
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
async function readCandidates(
  root: string,
  corpus: ReadonlyMap<string, CorpusDoc>,
  report: LoadReport,
  sources: SourceFile[],
): Promise<Map<string, string[]>> {
  const scenes = new Map<string, string[]>();
  await readJsonl(root, CANDIDATES, report, sources, (value, line) => {
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

function buildMemories(
  corpus: ReadonlyMap<string, CorpusDoc>,
  scenes: ReadonlyMap<string, readonly string[]>,
  folder: string,
): Memory[] {
  const bankOf = new Map<string, string>();
  for (const [scene, ids] of scenes) {
    for (const id of ids) {
      const current = bankOf.get(id);
      if (current === undefined || scene < current) bankOf.set(id, scene);
    }
  }
  const memories: Memory[] = [];
  for (const [id, doc] of corpus) {
    const meta = doc.title === undefined || doc.title === '' ? {} : { title: doc.title };
    memories.push({ id, bankId: bankOf.get(id) ?? folder, text: doc.text, meta });
  }
  return memories;
}

interface RawQuery {
  readonly id: string;
  readonly text: string;
  readonly line: number;
}

async function readQueries(
  root: string,
  file: string,
  report: LoadReport,
  sources: SourceFile[],
): Promise<RawQuery[]> {
  const out: RawQuery[] = [];
  await readJsonl(root, file, report, sources, (value, line) => {
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
async function readQrels(
  root: string,
  file: string,
  report: LoadReport,
  sources: SourceFile[],
): Promise<Map<string, QrelsRow[]>> {
  const byQuery = new Map<string, QrelsRow[]>();
  let firstRow = true;
  const sha256 = await readLines(join(root, file), (text, line) => {
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
 * Reads a JSONL file line by line; a malformed line becomes a report issue with its line
 * number, never a crash. Records its SHA-256 in `sources`.
 */
async function readJsonl(
  root: string,
  file: string,
  report: LoadReport,
  sources: SourceFile[],
  onRecord: (value: unknown, line: number) => void,
): Promise<void> {
  const sha256 = await readLines(join(root, file), (text, line) => {
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (cause) {
      const message = `malformed JSON: ${(cause as Error).message}`;
      report.issue({ file, record: `line ${line}`, path: '', message });
      return;
    }
    onRecord(value, line);
  });
  sources.push({ name: file, sha256 });
}

/**
 * Streams a text file's lines (1-based numbers) and returns the SHA-256 of its bytes, hashed
 * from the same stream so the hash is of exactly what was read. Files can be large (MLDR's
 * corpus), so they are never held as one string.
 */
async function readLines(
  path: string,
  onLine: (text: string, line: number) => void,
): Promise<string> {
  const hash = createHash('sha256');
  const input = createReadStream(path);
  input.on('data', (chunk) => hash.update(chunk));
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  for await (const raw of lines) {
    line += 1;
    // A UTF-8 byte order mark would otherwise make the first JSON line malformed.
    onLine(line === 1 ? raw.replace(/^\uFEFF/, '') : raw, line);
  }
  return hash.digest('hex');
}

async function requireFile(root: string, file: string): Promise<void> {
  if (!(await isFile(join(root, file)))) {
    throw new DataMissingError(`LMEB folder ${root} is missing ${file}.`, {
      suggestion: `An LMEB task needs ${CORPUS}, ${CANDIDATES}, and ${QUERIES} with ${QRELS} per subset.`,
    });
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
