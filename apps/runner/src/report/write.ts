import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderReport } from './render.js';
import type { RenderOptions } from './render.js';
import type { ReportInput } from './schema.js';

/** Where {@link writeReport} put the two files. */
export interface WrittenReport {
  readonly markdown: string;
  readonly html: string;
}

/** Writes `text` beside `path` under a unique name, then renames it over `path`. */
async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, text, 'utf8');
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/**
 * Renders the report and writes `report.md` and `report.html` into `dir` (created if needed).
 * Each file is replaced atomically (a temporary sibling, then a rename), so a reader sees the
 * old file or the new one, never half of one.
 *
 * @example
 * const { html } = await writeReport('runs/locomo-minilm/3f2a', input);
 * // html: 'runs/locomo-minilm/3f2a/report.html'
 */
export async function writeReport(
  dir: string,
  input: ReportInput,
  options: RenderOptions = {},
): Promise<WrittenReport> {
  const report = renderReport(input, options);
  await mkdir(dir, { recursive: true });
  const markdown = join(dir, 'report.md');
  const html = join(dir, 'report.html');
  await writeAtomic(markdown, report.markdown);
  await writeAtomic(html, report.html);
  return { markdown, html };
}
