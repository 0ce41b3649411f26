import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@bfe/core';
import { renderReport } from './render.js';
import type { RenderOptions } from './render.js';
import type { ReportInput } from './schema.js';

/** Where {@link writeReport} put the two files. */
export interface WrittenReport {
  readonly markdown: string;
  readonly html: string;
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
  await writeFileAtomic(markdown, report.markdown);
  await writeFileAtomic(html, report.html);
  return { markdown, html };
}
