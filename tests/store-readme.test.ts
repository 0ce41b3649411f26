import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveModelDir } from '@bfe/models';
import { readmeExample, repoRoot } from './helpers.ts';

const hasModel = existsSync(join(resolveModelDir('all-minilm-l6-v2'), 'bfe-model.json'));
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const required = process.env.BFE_REQUIRE_MODEL === '1';

describe.skipIf(!hasModel && !required)(
  'packages/store/README.md’s example runs as written (needs the MiniLM model)',
  () => {
    it('opens, adds, searches with evidence, deletes and closes', () => {
      const code = readmeExample(join(repoRoot, 'packages/store/README.md'));
      // Inside the tests package, so `@bfe/store` resolves as it does for a user of the package.
      const dir = join(repoRoot, 'tests', '.readme-example', String(process.pid));
      mkdirSync(dir, { recursive: true });
      const file = join(dir, 'example.ts');
      writeFileSync(file, code);
      try {
        const r = spawnSync(
          process.execPath,
          ['--conditions=@bfe/source', '--import', 'tsx', file],
          { cwd: join(repoRoot, 'tests'), encoding: 'utf8', timeout: 300_000 },
        );
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        const lines = r.stdout.split('\n');
        // The ranked results: the memory about the cat first.
        expect(lines[0]).toMatch(
          /^1 m1 -?\d+\.\d{3} Alice adopted a grey cat called Miso in May\.$/,
        );
        expect(lines[1]).toMatch(/^2 m[23] /);
        // The evidence: the query token "cat" matched the memory's "cat", not floored.
        const evidence = r.stdout.slice(r.stdout.indexOf('\n', r.stdout.indexOf('\n') + 1));
        expect(evidence).toMatch(/\bm1\b/);
        expect(evidence).toMatch(/^\s*cat\s+→\s+cat\s+0\.\d{3}\b/m);
        // After the delete, alice's bank lists m1 and m2 only.
        expect(r.stdout.trimEnd().split('\n').at(-1)).toBe("[ 'm1', 'm2' ]");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 300_000);
  },
);
