import { join, resolve } from 'node:path';
import { benchmarkHash, writeFileAtomic, type LoadedDataset } from '@bfe/core';
import type { DataLocation } from './files.js';

/**
 * Where {@link saveLoadReport} puts a dataset's load report beside the data:
 * `<dataDir>/reports/<name>-<hash12>.load-report.json`, keyed by the benchmark's content hash
 * (its name alone is not unique: two LMEB folders both called `base`, or one dataset loaded
 * with other options, would overwrite each other's report).
 * @example
 * loadReportPath('/d', 'lmeb:base', '3f2a…'); // '/d/reports/lmeb_base-3f2a9c01b7e4.load-report.json'
 */
export function loadReportPath(dataDir: string, dataset: string, hash: string): string {
  const safe = dataset.replace(/[^A-Za-z0-9._-]+/g, '_');
  return join(dataDir, 'reports', `${safe}-${hash.slice(0, 12)}.load-report.json`);
}

/**
 * Saves a dataset's load report as JSON: to `target` when it is a path, else beside the data
 * ({@link loadReportPath}). The JSON carries the full `benchmarkHash`. Returns the path written.
 */
export async function saveLoadReport(
  loaded: LoadedDataset,
  target: string | DataLocation,
): Promise<string> {
  const hash = benchmarkHash(loaded.benchmark);
  const path =
    typeof target === 'string'
      ? resolve(target)
      : loadReportPath(target.dataDir, loaded.benchmark.name, hash);
  const body = { benchmarkHash: hash, ...loaded.report.toJSON() };
  await writeFileAtomic(path, `${JSON.stringify(body, null, 2)}\n`);
  return path;
}
