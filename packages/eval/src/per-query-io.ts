import { stat } from 'node:fs/promises';
import { DataError, DataMissingError, readLines, writeJsonlAtomic } from '@bfe/core';
import { z } from 'zod';
import { perQueryLineSchema } from './per-query.js';
import type { PerQueryLine } from './per-query.js';

/**
 * Parses and validates one line of `per-query.jsonl`.
 *
 * @throws DataError naming the file and the 1-based line number, with the JSON error or zod's
 *   readable report.
 * @example
 * parsePerQueryLine('{"system":"bm25","queryId":"q1","subtask":"1","ranked":["m2"],"relevant":["m2"]}', 1);
 */
export function parsePerQueryLine(
  text: string,
  lineNumber: number,
  file = 'per-query.jsonl',
): PerQueryLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DataError(`${file}:${lineNumber}: not valid JSON (${(error as Error).message}).`, {
      file,
      cause: error,
    });
  }
  const parsed = perQueryLineSchema.safeParse(value);
  if (!parsed.success) {
    throw new DataError(
      `${file}:${lineNumber}: not a per-query line:\n${z.prettifyError(parsed.error)}`,
      {
        file,
      },
    );
  }
  return parsed.data;
}

/**
 * Reads `per-query.jsonl` line by line (streamed), validating each line; blank lines are
 * skipped.
 *
 * @throws DataMissingError when the file does not exist.
 * @throws DataError on the first malformed line, naming its line number.
 * @example
 * const lines = await readPerQueryJsonl('runs/locomo/per-query.jsonl');
 * lines.length; // systems × queries
 */
export async function readPerQueryJsonl(path: string): Promise<PerQueryLine[]> {
  try {
    await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new DataMissingError(`${path}: no such per-query file.`, { cause: error });
    }
    throw error;
  }
  const lines: PerQueryLine[] = [];
  await readLines(path, (text, lineNumber) => {
    if (text.trim() !== '') lines.push(parsePerQueryLine(text, lineNumber, path));
  });
  return lines;
}

/**
 * Writes per-query lines as JSON Lines, streamed, atomically (`writeJsonlAtomic` of
 * `@bfe/core`: a temporary sibling, flushed, then renamed to `path`), so a crash never leaves a
 * complete-looking partial file. Each line is validated before it is written.
 *
 * @throws Error when a line does not fit {@link perQueryLineSchema} (a programmer error); the
 *   temporary file is removed.
 * @example
 * await writePerQueryJsonl('runs/x/per-query.jsonl', [
 *   ...perQueryLines('pooled', pooled),
 *   ...perQueryLines('sparse-fusion', fusion),
 * ]); // { lines: 2 × queries }
 */
export async function writePerQueryJsonl(
  path: string,
  lines: Iterable<PerQueryLine> | AsyncIterable<PerQueryLine>,
): Promise<{ lines: number }> {
  async function* validated(): AsyncGenerator<PerQueryLine> {
    let count = 0;
    for await (const line of lines) {
      const parsed = perQueryLineSchema.safeParse(line);
      if (!parsed.success) {
        throw new Error(
          `writePerQueryJsonl: line ${count + 1} is invalid:\n${z.prettifyError(parsed.error)}`,
        );
      }
      count += 1;
      yield parsed.data;
    }
  }
  return writeJsonlAtomic(path, validated());
}
