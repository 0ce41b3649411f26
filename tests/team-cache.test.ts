import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { resolveModelDir } from '@bfe/models';
import {
  startCacheServer,
  type TestCacheServer,
} from '../apps/runner/src/cache/testing/cache-server.ts';
import { mirror, repoRoot, requireData, requireModel } from './helpers.ts';

// One team cache, two fresh clones (issue 18, "One team cache"): clone A, with empty local
// caches, runs the LoCoMo experiment and a build through turbo and uploads everything;
// clone B, with empty local caches too, gets every turbo task from the remote cache (counted
// in turbo's run summary), then runs the experiment with bfe itself and gets every bfe stage
// from the remote tier (counted in `bfe run --json`); the three results.json are byte-identical.
// The server is npm turborepo-remote-cache (tools/cache-serve.mjs) on 127.0.0.1, a free port.
//
// The experiment is configs/experiments/locomo-minilm-smoke.yaml: the main job's pipeline on the
// same official LoCoMo file, model and split policy through every stage (dataset, encode, split,
// adapt, score), small enough to run in seconds (272 session memories). Its artifacts travel in
// 4 MiB parts (BFE_REMOTE_CACHE_CHUNK_BYTES), so the encoded bank (≈ 30 MB) goes to the server
// and back in several requests, as the main job's 342 MiB bank does in 32 MiB parts.

const hasModel = existsSync(join(resolveModelDir('all-minilm-l6-v2'), 'bfe-model.json'));
/** The experiment both clones run: its config, its turbo task and its runs folder. */
const PRESET = {
  config: 'configs/experiments/locomo-minilm-smoke.yaml',
  task: 'experiment:locomo-smoke',
  runs: 'runs/locomo-minilm-smoke',
};
const EXPERIMENT = PRESET.config;
/** Bytes per uploaded part of a bfe artifact. */
const PART_BYTES = 4 * 1024 * 1024;

/**
 * A fresh clone of the working tree (tracked and new files, as `git status` sees them) in
 * `dir`, committed in a repository of its own, with the installed node_modules linked in: no
 * .bfe-cache, no .turbo, no runs.
 */
function cloneWorkingTree(dir: string): void {
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: repoRoot, encoding: 'utf8', maxBuffer: 64 << 20 },
  )
    .split('\0')
    .filter((f) => f !== '');
  for (const f of files) {
    const from = join(repoRoot, f);
    if (!existsSync(from)) continue; // deleted in the working tree
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(from, join(dir, f));
  }
  // node_modules: the root's linked, each workspace package's symlinks copied as they are
  // (relative links, so workspace packages resolve inside the clone).
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(repoRoot, group))) {
      copyModules(join(repoRoot, group, name), join(dir, group, name));
    }
  }
  copyModules(join(repoRoot, 'tests'), join(dir, 'tests'));
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: dir, stdio: 'pipe', env: gitEnv });
  git('init', '-q');
  writeFileSync(join(dir, '.git', 'info', 'exclude'), 'node_modules\n');
  git('add', '-A');
  git('commit', '-qm', 'clone');
}

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bfe',
  GIT_AUTHOR_EMAIL: 'bfe@example.invalid',
  GIT_COMMITTER_NAME: 'bfe',
  GIT_COMMITTER_EMAIL: 'bfe@example.invalid',
};

function copyModules(from: string, to: string): void {
  const modules = join(from, 'node_modules');
  if (!existsSync(modules) || !existsSync(to)) return;
  cpSync(modules, join(to, 'node_modules'), { recursive: true, verbatimSymlinks: true });
}

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command in a clone with the team cache's variables and the data mirror. */
function runIn(dir: string, command: string, args: string[], env: Record<string, string>) {
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('TURBO_') && k !== 'BFE_CACHE_DIR') childEnv[k] = v;
  }
  Object.assign(childEnv, env, {
    TURBO_TELEMETRY_DISABLED: '1',
    BFE_DATA_MIRROR: mirror ?? '',
    // The clone's node_modules is the checkout's: pnpm must never install through that link.
    npm_config_verify_deps_before_run: 'false',
    BFE_REMOTE_CACHE_CHUNK_BYTES: String(PART_BYTES),
  });
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, { cwd: dir, env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The build of one package and the experiment, in one turbo run with a run summary. */
const TURBO_ARGS = [
  'tools/turbo.mjs',
  'run',
  'build',
  PRESET.task,
  '--filter=@bfe/core',
  '--filter=//',
  '--summarize',
  '--output-logs=errors-only',
];

interface TaskSummary {
  readonly taskId: string;
  readonly cache: { readonly status: string; readonly source?: string };
}

/** The sizes of every file the cache server stores. */
function storedSizes(dir: string): number[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => statSync(join(e.parentPath, e.name)).size);
}

/** Tasks of the clone's (only) turbo run summary. */
function turboTasks(dir: string): TaskSummary[] {
  const runs = join(dir, '.turbo', 'runs');
  const [file] = readdirSync(runs).filter((f) => f.endsWith('.json'));
  return (JSON.parse(readFileSync(join(runs, file!), 'utf8')) as { tasks: TaskSummary[] }).tasks;
}

/** The results.json of the experiment's only run folder in a clone (or the named one). */
function resultsIn(dir: string, runDir?: string): Buffer {
  if (runDir !== undefined) return readFileSync(join(runDir, 'results.json'));
  const runs = join(dir, PRESET.runs);
  const ids = readdirSync(runs).filter((f) => /^\d{8}T/.test(f));
  expect(ids).toHaveLength(1);
  return readFileSync(join(runs, ids[0]!, 'results.json'));
}

const root = suiteTmpDir('bfe-team-cache-e2e-');
let server: TestCacheServer;

describe.skipIf((mirror === undefined && !requireData) || (!hasModel && !requireModel))(
  'one team cache: two fresh clones, one server (real LoCoMo, MiniLM)',
  () => {
    beforeAll(async () => {
      server = await startCacheServer({ storage: join(root(), 'server') });
    }, 90_000);
    afterAll(async () => {
      await server?.stop();
    });

    it('clone B gets every turbo task and every bfe stage from the remote, with byte-identical results.json', async () => {
      const a = join(root(), 'clone-a');
      const b = join(root(), 'clone-b');
      cloneWorkingTree(a);
      cloneWorkingTree(b);

      const first = await runIn(a, process.execPath, TURBO_ARGS, server.env);
      expect(first.code, first.stderr + first.stdout).toBe(0);
      const tasksA = turboTasks(a);
      expect(tasksA.map((t) => t.taskId).sort()).toEqual([`//#${PRESET.task}`, '@bfe/core#build']);
      expect(tasksA.every((t) => t.cache.status === 'MISS')).toBe(true);
      // The encoded bank went up in parts: no stored object is larger than a part, together
      // they hold far more than one.
      const sizes = storedSizes(join(root(), 'server'));
      expect(Math.max(...sizes)).toBeLessThanOrEqual(PART_BYTES);
      expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(4 * PART_BYTES);

      const second = await runIn(b, process.execPath, TURBO_ARGS, server.env);
      expect(second.code, second.stderr + second.stdout).toBe(0);
      const tasksB = turboTasks(b);
      const remoteHits = tasksB.filter(
        (t) => t.cache.status === 'HIT' && t.cache.source === 'REMOTE',
      );
      expect(remoteHits).toHaveLength(tasksA.length);
      expect(resultsIn(b).equals(resultsIn(a))).toBe(true);

      // bfe itself in clone B: its .bfe-cache is empty, every stage comes from the remote tier.
      expect(existsSync(join(b, '.bfe-cache'))).toBe(false);
      const direct = await runIn(
        b,
        process.execPath,
        [
          '--conditions=@bfe/source',
          '--import',
          'tsx',
          'apps/runner/src/bin.ts',
          'run',
          EXPERIMENT,
          '--json',
        ],
        server.env,
      );
      expect(direct.code, direct.stderr).toBe(0);
      const out = JSON.parse(direct.stdout) as {
        runDir: string;
        stages: Array<{ name: string; source: string }>;
      };
      expect(out.stages.map((s) => s.name)).toEqual([
        'dataset',
        'encode',
        'split@42',
        'adapt@42',
        'score@42',
      ]);
      const fromRemote = out.stages.filter((s) => s.source === 'remote');
      expect(fromRemote).toHaveLength(out.stages.length);
      expect(resultsIn(b, out.runDir).equals(resultsIn(a))).toBe(true);
    }, 3_600_000);

    it('stops loudly on a wrong token, for turbo and for bfe', async () => {
      const c = join(root(), 'clone-c');
      cloneWorkingTree(c);
      const env = { ...server.env, TURBO_TOKEN: 'not-the-token' };
      const turbo = await runIn(
        c,
        process.execPath,
        ['tools/turbo.mjs', 'run', 'build', '--filter=@bfe/core'],
        env,
      );
      expect(turbo.code).toBe(2);
      expect(turbo.stderr).toMatch(/refused team '.*' with this TURBO_TOKEN \(HTTP 401\)/);
      const bfe = await runIn(
        c,
        process.execPath,
        [
          '--conditions=@bfe/source',
          '--import',
          'tsx',
          'apps/runner/src/bin.ts',
          'run',
          EXPERIMENT,
        ],
        env,
      );
      expect(bfe.code).toBe(2);
      expect(bfe.stderr).toMatch(/REMOTE_CACHE_AUTH/);
      expect(existsSync(join(c, '.bfe-cache'))).toBe(false);
    }, 300_000);
  },
);
