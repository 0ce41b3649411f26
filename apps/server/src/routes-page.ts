import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { App } from './access.js';

/** The page's files (vanilla HTML, CSS and JS; no build step) and their content types. */
const ASSETS: readonly (readonly [route: string, file: string, type: string])[] = [
  ['/', 'index.html', 'text/html; charset=utf-8'],
  ['/ui/page.css', 'page.css', 'text/css; charset=utf-8'],
  ['/ui/page.js', 'page.js', 'text/javascript; charset=utf-8'],
];

/**
 * Everything from this origin, nothing else: no CDN, no inline script, no remote fetch (the
 * page works with the network blocked).
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
  "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The page's folder beside this module: `src/page/` when run from source (tsx, vitest), and
 * `dist/page/` in the build (the package's build script copies it there).
 */
function pageDir(): string {
  const dir = fileURLToPath(new URL('page/', import.meta.url));
  if (!existsSync(dir + 'index.html'))
    throw new Error(`the web page's files are missing: ${dir} (rebuild the server: pnpm build)`);
  return dir;
}

/**
 * `GET /` (the web page) and its assets under `/ui/`: public (no key needed to load it; its API
 * calls carry the key the user types), still loopback-only when the server has no keys file.
 */
export function pageRoutes(app: App): void {
  const dir = pageDir();
  for (const [route, file, type] of ASSETS) {
    const content = readFileSync(dir + file, 'utf8');
    app.get(route, { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
      reply
        .type(type)
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'no-cache')
        .send(content),
    );
  }
}
