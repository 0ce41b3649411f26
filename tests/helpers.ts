import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsTree } from '@bfe/core/testing';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** The mirror of real benchmark files, or undefined when `BFE_DATA_MIRROR` is not set. */
export const mirror = process.env.BFE_DATA_MIRROR
  ? resolve(repoRoot, process.env.BFE_DATA_MIRROR)
  : undefined;

/**
 * CI sets BFE_REQUIRE_DATA=1 and BFE_REQUIRE_MODEL=1: a test that needs the mirror or the model
 * then runs, and fails without it, instead of skipping.
 */
export const requireData = process.env.BFE_REQUIRE_DATA === '1';
export const requireModel = process.env.BFE_REQUIRE_MODEL === '1';

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The `bfe` CLI's entry in the workspace's sources transpiled to JavaScript (`jsTree`: the
 * transform tsx applies, done once, so a child starts without a loader hook — ≈ 0.5 s of CPU
 * instead of ≈ 1 s under tsx).
 */
export function bfeEntry(): string {
  return join(jsTree(repoRoot), 'apps/runner/src/bin.js');
}

/**
 * Runs the `bfe` CLI from the workspace's sources ({@link bfeEntry}) with a controlled
 * environment; `wrapper` is a command line that the node command line is appended to (e.g.
 * `unshare … sh -c SCRIPT sh`).
 */
export function runBfe(
  args: readonly string[],
  env: Record<string, string | undefined>,
  wrapper: readonly string[] = [],
): Promise<CliResult> {
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...env }))
    if (v !== undefined) childEnv[k] = v;
  if (env.BFE_DATA_MIRROR === undefined) delete childEnv.BFE_DATA_MIRROR;
  return new Promise((resolvePromise, reject) => {
    const command = [...wrapper, process.execPath, bfeEntry(), ...args];
    const child = spawn(command[0]!, command.slice(1), { cwd: repoRoot, env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

/** The ```ts block between `<!-- example:start -->` and `<!-- example:end -->` of a README. */
export function readmeExample(path: string): string {
  const text = readFileSync(path, 'utf8');
  const m = /<!-- example:start -->\s*```ts\n([\s\S]*?)```\s*<!-- example:end -->/.exec(text);
  if (m === null) throw new Error(`${path}: no example block`);
  return m[1]!;
}
