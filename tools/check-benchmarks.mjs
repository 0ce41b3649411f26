#!/usr/bin/env node
// "Everything a document claims is reproducible by a command committed in the repository"
// (HOUSE.md), checked for BENCHMARKS.md. The convention the document states at its top:
//
// 1. Every table (a run of lines starting with `|`, outside fenced blocks) is followed by a
//    fenced ```sh block before the next heading: the first such block after a table holds the
//    commands that regenerate it (and every table since the previous block).
// 2. What those blocks and the document's inline code name must exist in the repository:
//    - `pnpm bfe run <file>`: the file;
//    - `pnpm bfe <command> [<subcommand>]` (and a span or line starting with `bfe`): a command
//      registered in apps/runner/src/cli/program.ts;
//    - `pnpm <script>`, `pnpm run <script>`, `npm run <script>`, `npm start`: a root
//      package.json script;
//    - `python3 <path>` / `python <path>` and every `configs/…`, `apps/…`, `tools/…`,
//      `packages/…`, `tests/…` path: the file or folder (`<placeholders>` and globs skipped);
//    - no absolute path under /work/ (scratch files are not in the repository).
//
// Usage: node tools/check-benchmarks.mjs [file]   (default: BENCHMARKS.md at the root)
// Exit 1 with one `file:line: message` per problem.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const docPath = resolve(process.argv[2] ?? join(root, 'BENCHMARKS.md'));
const shown = relative(process.cwd(), docPath) || docPath;

/** Root package.json scripts. */
const scripts = new Set(
  Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts ?? {}),
);
/** pnpm's own commands, which are not scripts. */
const PNPM_BUILTINS = new Set(['install', 'i', 'add', 'exec', 'dlx', 'why', 'list', 'store']);

/**
 * The `bfe` command tree from program.ts: top-level names, and per group its subcommands.
 * Each imported `xCommand()` names its command in `new Command('name')` in its own file.
 */
function readCommandTree() {
  const cliDir = join(root, 'apps/runner/src/cli');
  const program = readFileSync(join(cliDir, 'program.ts'), 'utf8');
  const nameOf = new Map();
  for (const m of program.matchAll(/import \{ (\w+) \} from '(\.\.\/commands\/[\w-]+)\.js'/g)) {
    const text = readFileSync(join(cliDir, `${m[2]}.ts`), 'utf8');
    const named = /new Command\('([\w:-]+)'\)/.exec(text);
    if (named !== null) nameOf.set(m[1], named[1]);
  }
  const groups = new Map(); // variable → group name
  const tree = new Map([['', new Set()]]); // group name ('' = top level) → names
  for (const m of program.matchAll(/const (\w+) = program\s*\.command\('([\w-]+)'\)/g)) {
    groups.set(m[1], m[2]);
  }
  for (const m of program.matchAll(/program\s*\.command\('([\w-]+)'\)/g)) {
    tree.get('').add(m[1]);
    if (!tree.has(m[1])) tree.set(m[1], new Set());
  }
  // `program.command('model')…addCommand(modelFetchCommand())` on one statement.
  for (const m of program.matchAll(
    /program\s*\.command\('([\w-]+)'\)[^;]*?\.addCommand\((\w+)\(\)\)/g,
  )) {
    if (nameOf.has(m[2])) tree.get(m[1]).add(nameOf.get(m[2]));
  }
  for (const m of program.matchAll(/(\w+)\.addCommand\((\w+)\(\)\)/g)) {
    const name = nameOf.get(m[2]);
    if (name === undefined) continue;
    if (m[1] === 'program') tree.get('').add(name);
    else if (groups.has(m[1])) tree.get(groups.get(m[1])).add(name);
  }
  return tree;
}
const commands = readCommandTree();

const problems = [];
const report = (line, message) => problems.push(`${shown}:${line}: ${message}`);

const PATH = /(?:^|[\s`'"(=,])((?:configs|apps|tools|packages|tests)\/[\w./@+{},-]*[\w/}])/g;

/** `a/{b,c}.yaml` → `a/b.yaml`, `a/c.yaml` (one level of braces). */
function expandBraces(path) {
  const m = /\{([^{}]*)\}/.exec(path);
  if (m === null) return [path];
  return m[1]
    .split(',')
    .map((alt) => path.slice(0, m.index) + alt + path.slice(m.index + m[0].length));
}

function checkPath(path, line) {
  if (/[<>*]/.test(path)) return;
  for (const p of expandBraces(path.replace(/[.,:;]+$/, ''))) {
    if (!existsSync(join(root, p))) report(line, `${p} does not exist in the repository`);
  }
}

/** Checks one shell command (already split from its neighbours) for what it names. */
function checkCommand(words, line) {
  const at = words.findIndex((w) => /^(pnpm|npm|python3?|bfe)$/.test(w));
  if (at < 0) return;
  const [tool, first, second, third] = words.slice(at);
  if (tool === 'python' || tool === 'python3') {
    if (first !== undefined && !first.startsWith('-') && !/[<>]/.test(first)) {
      if (!existsSync(join(root, first))) report(line, `${first} does not exist in the repository`);
    }
    return;
  }
  const bfe = (cmd, sub, arg) => {
    if (cmd === undefined || cmd.startsWith('-') || /[<>…]/.test(cmd)) return;
    if (!commands.get('').has(cmd)) return report(line, `\`bfe ${cmd}\` is not a bfe command`);
    const children = commands.get(cmd);
    if (children !== undefined && children.size > 0) {
      if (sub === undefined || !children.has(sub))
        report(line, `\`bfe ${cmd} ${sub ?? ''}\` is not a bfe command`);
      return;
    }
    if (cmd === 'run' && arg === undefined && sub !== undefined && !sub.startsWith('-')) {
      if (!/[<>]/.test(sub) && !existsSync(join(root, sub)))
        report(line, `\`bfe run ${sub}\`: ${sub} does not exist in the repository`);
    }
  };
  if (tool === 'bfe') return bfe(first, second, undefined);
  if (tool === 'npm') {
    if (first === 'start' || first === 'test') {
      if (!scripts.has(first)) report(line, `npm ${first}: no "${first}" script in package.json`);
    } else if (first === 'run' && second !== undefined && !scripts.has(second)) {
      report(line, `npm run ${second}: no such script in package.json`);
    }
    return;
  }
  // pnpm
  let script = first;
  let rest = [second, third];
  if (first === 'run') [script, ...rest] = [second, third];
  if (script === undefined || script.startsWith('-') || PNPM_BUILTINS.has(script)) return;
  if (!scripts.has(script)) return report(line, `pnpm ${script}: no such script in package.json`);
  if (script === 'bfe') bfe(rest[0], rest[1], undefined);
}

/** Splits a shell line into commands (`&&`, `||`, `;`, `|`), drops comments, checks each. */
function checkShell(text, line) {
  const code = text.replace(/(^|\s)#.*$/, '');
  for (const part of code.split(/&&|\|\||;|\|/)) {
    checkCommand(part.trim().split(/\s+/).filter(Boolean), line);
  }
}

const lines = readFileSync(docPath, 'utf8').split('\n');
let fence = null; // the opening line of the fenced block we are in
let fenceLang = '';
let pendingTable = null; // line of a table still waiting for its ```sh block
let inTable = false;
let continued = '';
let continuedAt = 0;
for (let i = 0; i < lines.length; i++) {
  const n = i + 1;
  const text = lines[i];
  if (/\/work\//.test(text)) report(n, 'an absolute /work/ path: commit the file and name it');
  const opener = /^\s*```(\w*)/.exec(text);
  if (fence !== null) {
    if (opener !== null && opener[1] === '') {
      fence = null;
      continue;
    }
    if (fenceLang === 'sh') {
      for (const m of text.matchAll(PATH)) checkPath(m[1], n);
      const joined = continued === '' ? text : `${continued} ${text.trim()}`;
      if (continued === '') continuedAt = n;
      if (joined.trimEnd().endsWith('\\')) {
        continued = joined.trimEnd().slice(0, -1);
        continue;
      }
      continued = '';
      checkShell(joined, continuedAt);
    }
    continue;
  }
  if (opener !== null) {
    fence = n;
    fenceLang = opener[1];
    if (fenceLang === 'sh') pendingTable = null;
    inTable = false;
    continue;
  }
  const isTable = text.startsWith('|');
  if (isTable && !inTable && pendingTable === null) pendingTable = n;
  inTable = isTable;
  if (/^#{1,6} /.test(text) && pendingTable !== null) {
    report(pendingTable, 'table without a ```sh block of commands before the next heading');
    pendingTable = null;
  }
  for (const m of text.matchAll(/`([^`]+)`/g)) {
    for (const p of m[1].matchAll(PATH)) checkPath(p[1], n);
    checkShell(m[1], n);
  }
}
if (fence !== null) report(fence, 'fenced block never closed');
if (pendingTable !== null) report(pendingTable, 'table without a ```sh block of commands after it');

if (problems.length > 0) {
  console.error(
    `${problems.join('\n')}\n${problems.length} problem(s): see the convention at the top of ${shown}`,
  );
  process.exit(1);
}
console.log(`${shown}: every table has its commands, and every command and path it names exists`);
