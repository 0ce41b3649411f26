import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';

const pkg = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = join(pkg, '..', '..');

/**
 * The package's own build script (`tsc -b` of the server and the packages it references, then
 * the page's copy), run as `pnpm build` runs it: in the package folder, with the workspace's
 * binaries on the PATH.
 */
function build(): void {
  const script = (
    JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as {
      scripts: { build: string };
    }
  ).scripts.build;
  const bins = [join(pkg, 'node_modules', '.bin'), join(repoRoot, 'node_modules', '.bin')];
  const r = spawnSync(script, {
    cwd: pkg,
    shell: true,
    encoding: 'utf8',
    env: { ...process.env, PATH: [...bins, process.env.PATH ?? ''].join(delimiter) },
  });
  if (r.status !== 0) throw new Error(`build failed (${r.status}): ${r.stdout}${r.stderr}`);
}

describe('the built server (dist)', () => {
  it('serves the page from its own build output, and searches through its workers', async () => {
    build();
    const dist = join(pkg, 'dist');
    // Plain node, no source condition: the workspace packages resolve to their builds too.
    const child = spawn(
      process.execPath,
      [join(dist, 'bin.js'), '--store', tmpDir(), '--host', '127.0.0.1', '--port', '0'],
      { cwd: tmpDir(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
      expect(line).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
      const url = line.slice('listening on '.length);
      for (const [path, file, type] of [
        ['/', 'index.html', 'text/html; charset=utf-8'],
        ['/ui/page.js', 'page.js', 'text/javascript; charset=utf-8'],
        ['/ui/page.css', 'page.css', 'text/css; charset=utf-8'],
      ] as const) {
        const res = await fetch(`${url}${path}`);
        expect(res.status, path).toBe(200);
        expect(res.headers.get('content-type')).toBe(type);
        const body = await res.text();
        // The build's copy, the same as the source.
        expect(body).toBe(readFileSync(join(dist, 'page', file), 'utf8'));
        expect(body).toBe(readFileSync(join(pkg, 'src', 'page', file), 'utf8'));
      }
      // The build's workers (encoder, resident kernels) answer too.
      const post = (path: string, payload: unknown) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
        });
      const added = await post('/v1/banks/alice/memories', {
        memories: [
          { id: 'm1', text: 'Alice adopted a grey cat called Miso in May.' },
          { id: 'm2', text: 'Alice runs a half marathon every autumn.' },
        ],
      });
      expect(added.status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const res = await post('/v1/banks/alice/search', { query: 'the cat', k: 2 });
        expect(res.status).toBe(200);
        const { results } = (await res.json()) as { results: { id: string }[] };
        expect(results.map((r) => r.id)).toEqual(['m1', 'm2']);
      }
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 600_000);
});
