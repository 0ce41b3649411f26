import { join, resolve } from 'node:path';
import { writeFileAtomic, type LoadReport } from '@bfe/core';
import type { DataLocation } from './files.js';

/**
 * Saves a load report as JSON: to `target` when it is a path, else beside the data as
 * `<dataDir>/reports/<dataset>.load-report.json`. Returns the path written.
 */
export async function saveLoadReport(
  report: LoadReport,
  target: string | DataLocation,
  dataset: string,
): Promise<string> {
  const path =
    typeof target === 'string'
      ? resolve(target)
      : join(
          target.dataDir,
          'reports',
          `${dataset.replace(/[^A-Za-z0-9._-]+/g, '_')}.load-report.json`,
        );
  await writeFileAtomic(path, `${JSON.stringify(report.toJSON(), null, 2)}\n`);
  return path;
}
