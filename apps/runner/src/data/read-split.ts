import { DataError, splitSchema, type Split } from '@bfe/core';
import { readJsonFile } from '@bfe/datasets';
import { SplitInvalidError, splitContentHash } from '@bfe/split';
import { z } from 'zod';

/**
 * Reads and validates a split file (`bfe data split --out`, or a split stage's `split.json`):
 * the one split reader of `bfe score` and `bfe run`. The split's `hash` must be the hash of its
 * content (`@bfe/split`'s `splitContentHash`, as `makeSplit` computes it), so a split edited by
 * hand or damaged on disk (a query moved from train to test) is refused, never scored.
 *
 * @throws DataError naming the file, for malformed JSON or a file that is not a split.
 * @throws SplitInvalidError (code `SPLIT_INVALID`) naming the file when its hash does not match.
 */
export async function readSplitFile(path: string): Promise<Split> {
  const parsed = splitSchema.safeParse(await readJsonFile(path));
  if (!parsed.success) {
    throw new DataError(`${path} is not a split file:\n${z.prettifyError(parsed.error)}`, {
      file: path,
    });
  }
  const { hash, ...body } = parsed.data;
  const actual = splitContentHash(body);
  if (actual !== hash) {
    throw new SplitInvalidError(
      `${path}: the split's hash ${hash.slice(0, 12)}… does not match its content (${actual.slice(0, 12)}…): it was edited or is corrupt.`,
      {
        suggestion:
          'Make the split again (`bfe data split`); a split stage of `bfe run` is recomputed after `bfe cache verify --quarantine`.',
      },
    );
  }
  return parsed.data;
}
