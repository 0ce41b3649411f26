import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveModelDir } from '@bfe/models';
import { readmeExample, repoRoot } from './helpers.ts';

const hasModel = existsSync(join(resolveModelDir('all-minilm-l6-v2'), 'bfe-model.json'));
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const required = process.env.BFE_REQUIRE_MODEL === '1';

/** Runs a README's example as written, from the tests package (as a user of the packages). */
function runExample(readme: string, name: string): { stdout: string; stderr: string } {
  const code = readmeExample(join(repoRoot, readme));
  const dir = join(repoRoot, 'tests', '.readme-example', `${name}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'example.ts');
  writeFileSync(file, code);
  try {
    const r = spawnSync(process.execPath, ['--conditions=@bfe/source', '--import', 'tsx', file], {
      cwd: join(repoRoot, 'tests'),
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    return { stdout: r.stdout, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!hasModel && !required)(
  'the retrievers’ README examples run as written (need the MiniLM model)',
  () => {
    it('packages/langchain: invoke returns the cat memory first, with evidence', () => {
      const lines = runExample('packages/langchain/README.md', 'langchain').stdout.split('\n');
      expect(lines[0]).toMatch(/^1 m1 -?\d+\.\d{3} Alice adopted a grey cat called Miso in May\.$/);
      expect(lines[1]).toMatch(/^2 m[23] -?\d+\.\d{3} /);
      expect(Number(lines[2])).toBeGreaterThan(0);
    }, 300_000);

    it('packages/llamaindex: retrieve returns the cat memory first; the LLM view is clean', () => {
      const { stdout } = runExample('packages/llamaindex/README.md', 'llamaindex');
      const lines = stdout.split('\n');
      expect(lines[0]).toMatch(/^1 m1 -?\d+\.\d{3} Alice adopted a grey cat called Miso in May\.$/);
      expect(lines[1]).toMatch(/^2 m[23] -?\d+\.\d{3} /);
      expect(lines[2]).toMatch(/^3 m[23] -?\d+\.\d{3} /);
      // m3's LLM view: its own metadata and its text, none of the search's fields.
      expect(lines.slice(3).join('\n')).toBe('who: bob\n\nHer brother Bob is allergic to cats.\n');
    }, 300_000);
  },
);
