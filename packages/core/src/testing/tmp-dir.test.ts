import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { suiteTmpDir, tmpDir } from './tmp-dir.js';

describe('tmpDir', () => {
  let fromHook: string;
  beforeEach(() => {
    fromHook = tmpDir('bfe-hook-');
  });
  let previous: string[] = [];

  it('makes fresh directories under the system temp directory', () => {
    const a = tmpDir('bfe-tmp-test-');
    const b = tmpDir('bfe-tmp-test-');
    expect(a).not.toBe(b);
    expect(a.startsWith(join(realpathSync(tmpdir()), 'bfe-tmp-test-'))).toBe(true);
    writeFileSync(join(a, 'f'), 'x');
    expect(existsSync(fromHook)).toBe(true);
    previous = [a, b, fromHook];
  });

  it("removed the previous test's directories, those made in beforeEach included", () => {
    expect(previous).toHaveLength(3);
    for (const dir of previous) expect(existsSync(dir)).toBe(false);
  });
});

let suiteDir = '';
describe('suiteTmpDir', () => {
  const shared = suiteTmpDir('bfe-suite-');
  let first = '';

  it('is one directory for the whole suite', () => {
    first = shared();
    suiteDir = first;
    writeFileSync(join(first, 'kept'), 'x');
  });

  it('still holds what an earlier test wrote', () => {
    expect(shared()).toBe(first);
    expect(existsSync(join(first, 'kept'))).toBe(true);
  });
});

describe('suiteTmpDir cleanup', () => {
  it('removed the directory of the suite above once it ended', () => {
    expect(suiteDir).not.toBe('');
    expect(existsSync(suiteDir)).toBe(false);
  });
});
