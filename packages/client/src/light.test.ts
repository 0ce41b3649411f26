import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** The native modules a fresh node process has loaded after importing `specifier`. */
function nativeModulesAfterImport(specifier: string): string[] {
  const script = `
    import { createRequire } from 'node:module';
    const require = createRequire(process.cwd() + '/');
    await import(${JSON.stringify(specifier)});
    console.log(JSON.stringify(Object.keys(require.cache).filter((k) => /onnxruntime|usearch|apache-arrow/.test(k))));
  `;
  const r = spawnSync(
    process.execPath,
    ['--conditions=@bfe/source', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: packageRoot, encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as string[];
}

describe('an HTTP-only client', () => {
  it('loads no encoder, index or Arrow module (the wire format is @bfe/store/wire)', () => {
    expect(nativeModulesAfterImport('@bfe/client')).toEqual([]);
    // The check can see them: the store itself loads them.
    expect(nativeModulesAfterImport('@bfe/store').length).toBeGreaterThan(0);
  });
});
