import { basename, resolve } from 'node:path';
import { z } from 'zod';
import {
  ConfigError,
  DataMissingError,
  LoadReport,
  RelevanceLabels,
  type LoadedDataset,
  type Memory,
  type Query,
  type SourceFile,
} from '@bfe/core';
import {
  CANDIDATES,
  CORPUS,
  isDirectory,
  requireFile,
  resolveLayout,
  resolveSubsets,
} from './lmeb-layout.js';
import {
  readCandidates,
  readCorpus,
  readQrels,
  readQueries,
  type CorpusDoc,
  type QrelsRow,
} from './lmeb-records.js';

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
 * folder name. Qrels go into the labels only, each score > 0 kept as the grade (2, 3, … stay:
 * the evaluator's NDCG uses them as gains); rows with score ≤ 0 are counted as non-relevant.
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
