import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  DataError,
  benchmarkHash,
  loadSummarySchema,
  summarizeLoad,
  type LoadReportJson,
  type LoadSummary,
  type LoadedDataset,
} from '@bfe/core';
import { dataLocationFromEnv, datasetSources, loadDataset } from '@bfe/datasets';
import type { ArtifactResult } from '../../cache/store.js';
import { codeVersion } from '../code-version.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';

/** The dataset stage's outcome: its artifact, the source files and the parsed benchmark. */
export interface DatasetStage {
  readonly artifact: ArtifactResult;
  /** The official files, name and SHA-256, in the loader's order. */
  readonly sources: ReadonlyArray<{ readonly name: string; readonly sha256: string }>;
  /**
   * The parsed benchmark and labels, loaded once on first use (a fully cached run never parses)
   * and checked against the benchmark hash the cached stage recorded.
   */
  readonly load: () => Promise<LoadedDataset>;
  /**
   * What loading dropped, repaired and left unresolved (from the stage's `dataset.json`, so a
   * cached run reports it too): into `results.json`, the terminal and `report.md`.
   */
  readonly loadSummary: () => Promise<LoadSummary>;
}

/**
 * dataset: the benchmark's identity from its source files' hashes (the parse happens only when
 * a later stage needs it); the artifact is `dataset.json` (counts, subtasks, load report).
 * `lmeb:` folders are taken relative to the experiment file.
 */
export async function runDatasetStage(
  ctx: StageContext,
  e: Experiment,
  configPath: string,
): Promise<DatasetStage> {
  const name = e.dataset.name.startsWith('lmeb:')
    ? `lmeb:${resolve(configPath, '..', e.dataset.name.slice('lmeb:'.length))}`
    : e.dataset.name;
  const location = dataLocationFromEnv();
  const sources = await datasetSources(name, location);
  let loaded: Promise<LoadedDataset> | undefined;
  const parse = (): Promise<LoadedDataset> => {
    loaded ??= loadDataset(name, { location, options: e.dataset.options });
    return loaded;
  };
  const artifact = await ctx.run(
    'dataset',
    {
      stage: 'dataset',
      version: await codeVersion(['@bfe/core', '@bfe/datasets']),
      config: { name: e.dataset.name, options: e.dataset.options },
      inputs: Object.fromEntries(sources.map((s) => [`file:${s.name}`, s.sha256])),
    },
    async (dir) => {
      const { benchmark, labels, report } = await parse();
      const summary = {
        name: benchmark.name,
        benchmarkHash: benchmarkHash(benchmark),
        memories: benchmark.memories.length,
        queries: benchmark.queries.length,
        qrels: labels.pairCount,
        subtasks: benchmark.subtasks,
        sources,
        report: report.toJSON(),
      };
      await writeFile(join(dir, 'dataset.json'), `${JSON.stringify(summary, null, 2)}\n`);
      return { benchmarkHash: summary.benchmarkHash };
    },
  );
  const expectedHash = String(artifact.manifest.meta.benchmarkHash);
  const load = async (): Promise<LoadedDataset> => {
    const d = await parse();
    const hash = benchmarkHash(d.benchmark);
    if (hash !== expectedHash) {
      throw new DataError(
        `the dataset loads as benchmark ${hash.slice(0, 12)}…, but its cached stage says ${expectedHash.slice(0, 12)}…`,
        {
          suggestion:
            'The loader is not deterministic, or the cache is stale: run `bfe cache verify`.',
        },
      );
    }
    return d;
  };
  const loadSummary = async (): Promise<LoadSummary> => {
    const file = join(artifact.dir, 'dataset.json');
    const json = JSON.parse(await readFile(file, 'utf8')) as { report: LoadReportJson };
    const parsed = loadSummarySchema.safeParse(summarizeLoad(json.report));
    if (!parsed.success) throw new DataError(`${file}: no valid load report`, { file });
    return parsed.data;
  };
  return { artifact, sources, load, loadSummary };
}
