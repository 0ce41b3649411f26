import { DataError, splitSchema, type Split } from '@bfe/core';
import { readJsonFile } from '@bfe/datasets';
import { z } from 'zod';

/**
 * Reads and validates a split file (`bfe data split --out`, or a split stage's `split.json`):
 * the one split reader of `bfe score` and `bfe run`.
 *
 * @throws DataError naming the file, for malformed JSON or a file that is not a split.
 */
export async function readSplitFile(path: string): Promise<Split> {
  const parsed = splitSchema.safeParse(await readJsonFile(path));
  if (!parsed.success) {
    throw new DataError(`${path} is not a split file:\n${z.prettifyError(parsed.error)}`, {
      file: path,
    });
  }
  return parsed.data;
}
