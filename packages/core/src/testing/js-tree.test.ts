import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsTree } from './js-tree.js';
import { tmpDir } from './tmp-dir.js';

/** A workspace of two packages: `@w/app`'s bin imports `@w/lib` (TypeScript, source condition). */
function workspace(): string {
  const root = tmpDir();
  const pkg = (dir: string, json: object, files: Record<string, string>) => {
    mkdirSync(join(root, dir, 'src'), { recursive: true });
    writeFileSync(join(root, dir, 'package.json'), JSON.stringify(json));
    for (const [f, text] of Object.entries(files)) writeFileSync(join(root, dir, 'src', f), text);
  };
  const exports = (entry: string) => ({
    '.': { '@bfe/source': `./src/${entry}.ts`, default: `./dist/${entry}.js` },
  });
  pkg(
    'packages/lib',
    { name: '@w/lib', type: 'module', exports: exports('index') },
    {
      'index.ts': 'export const answer = (n: number): number => n * 2;\nexport type N = number;\n',
      'data.json': '{"k": 21}',
      'index.test.ts': 'throw new Error("tests are left out");\n',
    },
  );
  pkg(
    'apps/app',
    { name: '@w/app', type: 'module', exports: exports('bin') },
    {
      'bin.ts':
        "import { readFileSync } from 'node:fs';\nimport { answer, type N } from '@w/lib';\n" +
        "const k: N = JSON.parse(readFileSync(new URL('../../../packages/lib/src/data.json', import.meta.url), 'utf8')).k;\n" +
        'console.log(answer(k));\n',
    },
  );
  // As pnpm links a workspace dependency: the package's node_modules points at the other one.
  mkdirSync(join(root, 'apps/app/node_modules/@w'), { recursive: true });
  symlinkSync(join(root, 'packages/lib'), join(root, 'apps/app/node_modules/@w/lib'));
  return root;
}

describe('jsTree', () => {
  it('runs a workspace’s TypeScript with plain node, its packages resolved inside the tree', () => {
    const root = workspace();
    const tree = jsTree(root);
    const run = spawnSync(process.execPath, [join(tree, 'apps/app/src/bin.js')], {
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('42\n');
    expect(existsSync(join(tree, 'packages/lib/src/index.test.js'))).toBe(false);
    // The same sources: the same tree, not built again.
    expect(jsTree(root)).toBe(tree);
  });

  it('builds another tree when a source changes, and removes trees a day old', () => {
    const root = workspace();
    const first = jsTree(root);
    const day = new Date(Date.now() - 25 * 3600 * 1000);
    utimesSync(first, day, day);
    writeFileSync(
      join(root, 'packages/lib/src/index.ts'),
      'export const answer = (n: number) => n + 1;\n',
    );
    // A new process's view: this module remembers the tree it gave for a root.
    const second = jsTreeFresh(root);
    expect(second).not.toBe(first);
    expect(readdirSync(join(root, 'node_modules/.cache/bfe-js-tree'))).toEqual([
      second.split('/').pop(),
    ]);
    const run = spawnSync(process.execPath, [join(second, 'apps/app/src/bin.js')], {
      encoding: 'utf8',
    });
    expect(run.stdout).toBe('22\n');
  });
});

/** {@link jsTree} as a process that has not asked before would call it. */
function jsTreeFresh(root: string): string {
  const script = `import { jsTree } from ${JSON.stringify(new URL('./js-tree.ts', import.meta.url).href)}; console.log(jsTree(${JSON.stringify(root)}));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}
