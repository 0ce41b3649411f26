// The workspace as plain JavaScript for the processes tests start: every package's and app's
// `src/**/*.ts` (tests left out) transpiled file by file with esbuild — the transform tsx applies
// when it loads a file — into a mirror of the workspace, so a child runs `node <tree>/…/bin.js`
// with no loader hook. Under tsx each child spent ≈ 1 s of CPU starting (every module's resolve
// and load a round trip to the hooks thread); from the tree ≈ 0.5 s.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { transformSync } from 'esbuild';

const GROUPS = ['packages', 'apps'] as const;
const trees = new Map<string, string>();

/** A workspace package: its folder relative to the root and its `package.json`. */
interface Pkg {
  readonly dir: string;
  readonly json: { name: string; exports?: Record<string, string | Record<string, string>> };
}

function packagesOf(root: string): Pkg[] {
  const out: Pkg[] = [];
  for (const group of GROUPS) {
    for (const name of readdirSync(join(root, group))) {
      const dir = join(group, name);
      const file = join(root, dir, 'package.json');
      if (existsSync(file))
        out.push({ dir, json: JSON.parse(readFileSync(file, 'utf8')) as Pkg['json'] });
    }
  }
  return out;
}

/** Every file under `dir` (a package's `src`), as paths relative to it. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

/**
 * The tree for the workspace at `root` (built once per content: its folder is named by the hash
 * of every source file and `package.json`, under `node_modules/.cache/bfe-js-tree/`; a process
 * that finds it reuses it, two that build it at once both finish and one rename wins).
 * Returns its root: run `<tree>/apps/runner/src/bin.js`. Non-TypeScript files of `src` are
 * copied, every other entry of a package folder is linked, each package's `node_modules` is
 * rebuilt with the workspace's packages pointing into the tree.
 */
export function jsTree(root: string): string {
  const known = trees.get(root);
  if (known !== undefined) return known;
  const pkgs = packagesOf(root);
  const hash = createHash('sha256');
  const sources = new Map<string, string[]>();
  for (const p of pkgs) {
    hash.update(`${p.dir}\0${readFileSync(join(root, p.dir, 'package.json'), 'utf8')}\0`);
    const files = filesUnder(join(root, p.dir, 'src')).sort();
    sources.set(p.dir, files);
    for (const f of files) hash.update(`${f}\0`).update(readFileSync(join(root, p.dir, 'src', f)));
  }
  const cache = join(root, 'node_modules', '.cache', 'bfe-js-tree');
  const tree = join(cache, hash.digest('hex').slice(0, 16));
  if (!existsSync(tree)) {
    prune(cache);
    const building = `${tree}.${process.pid}.tmp`;
    rmSync(building, { recursive: true, force: true });
    build(root, pkgs, sources, building, tree);
    try {
      renameSync(building, tree);
    } catch (error) {
      // Another process renamed its copy first: use that one.
      rmSync(building, { recursive: true, force: true });
      if (!existsSync(tree)) throw error;
    }
  }
  trees.set(root, tree);
  return tree;
}

/** Trees (and unfinished builds) last changed a day ago or more: another source state's, gone. */
const STALE_MS = 24 * 3600 * 1000;

/** Removes the stale entries of `cache` (a run on another source state uses a fresh tree). */
function prune(cache: string): void {
  if (!existsSync(cache)) return;
  const now = Date.now();
  for (const e of readdirSync(cache)) {
    const p = join(cache, e);
    if (now - statSync(p).mtimeMs >= STALE_MS) rmSync(p, { recursive: true, force: true });
  }
}

function build(
  root: string,
  pkgs: readonly Pkg[],
  sources: ReadonlyMap<string, string[]>,
  out: string,
  final: string,
): void {
  const byName = new Map(pkgs.map((p) => [p.json.name, p]));
  for (const p of pkgs) {
    const from = join(root, p.dir);
    const to = join(out, p.dir);
    mkdirSync(to, { recursive: true });
    for (const f of sources.get(p.dir)!) {
      const src = join(from, 'src', f);
      if (/\.test\.ts$/.test(f)) continue;
      const dest = join(to, 'src', f);
      mkdirSync(dirname(dest), { recursive: true });
      if (f.endsWith('.ts') && !f.endsWith('.d.ts')) {
        const { code } = transformSync(readFileSync(src, 'utf8'), {
          loader: 'ts',
          format: 'esm',
          target: 'node20',
          sourcefile: src,
        });
        writeFileSync(dest.slice(0, -3) + '.js', code);
      }
      // The sources too (the runner hashes its own `.ts` files for cache keys).
      copyFileSync(src, dest);
    }
    // Exports: each entry's source file, transpiled.
    const exports: Record<string, string> = {};
    for (const [key, value] of Object.entries(p.json.exports ?? {})) {
      const target = typeof value === 'string' ? value : value['@bfe/source'];
      if (target !== undefined) exports[key] = target.replace(/\.ts$/, '.js');
    }
    writeFileSync(join(to, 'package.json'), JSON.stringify({ ...p.json, exports }, null, 2));
    for (const e of readdirSync(from)) {
      if (['src', 'dist', 'node_modules', 'package.json'].includes(e)) continue;
      symlinkSync(join(from, e), join(to, e));
    }
    linkModules(join(from, 'node_modules'), join(to, 'node_modules'), (name) => {
      const q = byName.get(name);
      return q === undefined ? undefined : join(final, q.dir);
    });
  }
}

/** `to` as `from` (a package's `node_modules`), workspace packages pointing into the tree. */
function linkModules(from: string, to: string, workspace: (name: string) => string | undefined) {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true });
  for (const e of readdirSync(from)) {
    if (e === '.bin' || e.startsWith('.')) continue;
    if (e.startsWith('@')) {
      mkdirSync(join(to, e), { recursive: true });
      for (const s of readdirSync(join(from, e))) {
        const name = `${e}/${s}`;
        symlinkSync(workspace(name) ?? realpathSync(join(from, name)), join(to, name));
      }
    } else symlinkSync(workspace(e) ?? realpathSync(join(from, e)), join(to, e));
  }
}
