import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { repoRoot } from './helpers.ts';

// tools/check-skips.mjs against the repository (every skip listed in README.md) and against
// small made-up repositories: an unlisted skip, a stale row, a run that skipped what it must run.

function check(args: readonly string[], env: Record<string, string> = {}) {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  for (const name of ['BFE_REQUIRE_MODEL', 'BFE_SKIP_BROWSER']) {
    if (!(name in env)) delete childEnv[name];
  }
  const r = spawnSync(process.execPath, [join(repoRoot, 'tools/check-skips.mjs'), ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: childEnv,
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

const README = `# x

## Tests that can skip

| test file | suite or test | skips when | runs with |
| --- | --- | --- | --- |
| \`src/a.test.ts\` | needs the model | no model | \`BFE_REQUIRE_MODEL=1\` |
| \`src/b.test.ts\` | opens a browser | \`BFE_SKIP_BROWSER=1\` | \`BFE_SKIP_BROWSER\` unset |

## Next
`;

/** Joins the skip sites below, so this file holds none itself (the check reads it too). */
const dot = '.';

/** A made-up repository: the README above and two test files, one skip each. */
function fixture(extraA = ''): string {
  const root = tmpDir('bfe-skips-');
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'README.md'), README);
  writeFileSync(
    join(root, 'src/a.test.ts'),
    `describe${dot}skipIf(!hasModel && !required)('needs the model', () => {});\n${extraA}`,
  );
  writeFileSync(
    join(root, 'src/b.test.ts'),
    `it${dot}skipIf(SKIP)('opens a browser', () => {});\n`,
  );
  return root;
}

describe('tools/check-skips.mjs', () => {
  it('finds every skip of this repository listed in README.md', () => {
    const r = check([]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/^\d+ skippable tests, each listed in README\.md/);
  });

  it('fails on a skip that README.md does not list, naming the file and line', () => {
    expect(check(['--root', fixture()]).code).toBe(0);
    for (const skip of [
      `it${dot}skip('later', () => {});`,
      `test${dot}runIf(linux)('on Linux', () => {});`,
      `it('x', (ctx) => { ctx${dot}skip(); });`,
      `describe${dot}todo('someday');`,
    ]) {
      const r = check(['--root', fixture(`\n\n${skip}\n`)]);
      expect(r.code, skip).toBe(1);
      expect(r.out).toContain('src/a.test.ts: 2 skip site(s) (line 1, 4), 1 row(s)');
    }
  });

  it('fails on a row whose skip is gone, whose title is not in the file, or whose file is gone', () => {
    const root = fixture();
    writeFileSync(join(root, 'src/b.test.ts'), `it('opens a browser', () => {});\n`);
    expect(check(['--root', root]).out).toContain('src/b.test.ts: 0 skip site(s)');
    writeFileSync(join(root, 'src/b.test.ts'), `it${dot}skipIf(SKIP)('renamed', () => {});\n`);
    expect(check(['--root', root]).out).toContain('no test or suite titled "opens a browser"');
    writeFileSync(join(root, 'README.md'), README.replace('src/b.test.ts', 'src/gone.test.ts'));
    const r = check(['--root', root]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('README.md: src/gone.test.ts does not exist');
  });

  it('after a run: a skipped test is an error unlisted, or where its row says it must run', () => {
    const root = fixture();
    const report = join(root, 'vitest.json');
    const result = (file: string, status: string) => ({
      name: join(root, file),
      assertionResults: [{ status, fullName: `${file} test` }],
    });
    const write = (...results: object[]) =>
      writeFileSync(report, JSON.stringify({ testResults: results }));

    write(result('src/a.test.ts', 'skipped'), result('src/b.test.ts', 'skipped'));
    // Here nothing requires them: BFE_REQUIRE_MODEL unset, BFE_SKIP_BROWSER=1.
    expect(check(['--root', root, '--report', report], { BFE_SKIP_BROWSER: '1' }).code).toBe(0);
    const ci = check(['--root', root, '--report', report], { BFE_REQUIRE_MODEL: '1' });
    expect(ci.code).toBe(1);
    expect(ci.out).toContain(
      'src/a.test.ts: "src/a.test.ts test" skipped, though it must run here (BFE_REQUIRE_MODEL=1)',
    );
    expect(ci.out).toContain('(BFE_SKIP_BROWSER unset)');

    write(result('src/a.test.ts', 'passed'), result('src/c.test.ts', 'skipped'));
    const unlisted = check(['--root', root, '--report', report]);
    expect(unlisted.code).toBe(1);
    expect(unlisted.out).toContain('src/c.test.ts: "src/c.test.ts test" skipped, and README.md');
  });
});
