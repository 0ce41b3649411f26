#!/usr/bin/env node
// The house rule "a file is readable in one sitting": no tracked non-test source file over 400
// lines. Test files (*.test.ts, tests/, testing/ helpers, fixtures) are exempt. Exit 1 and a
// list when any file is longer.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MAX_LINES = 400;
const root = fileURLToPath(new URL('..', import.meta.url));
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => /\.(ts|mts|js|mjs|cjs|py)$/.test(f))
  .filter((f) => !/\.test\.ts$/.test(f) && !/(^|\/)(tests|testing|fixtures)\//.test(f));

const long = [];
for (const f of files) {
  let text;
  try {
    text = readFileSync(`${root}/${f}`, 'utf8');
  } catch {
    continue; // deleted in the work tree
  }
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_LINES) long.push(`${f}: ${lines} lines`);
}
if (long.length > 0) {
  console.error(
    `Source files over ${MAX_LINES} lines (split them by concept):\n  ${long.join('\n  ')}`,
  );
  process.exit(1);
}
console.log(`${files.length} source files, none over ${MAX_LINES} lines`);
