import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The browser builds of vega, vega-lite and vega-embed (UMD, minified), inlined in report.html
 * in this order so each finds the globals of the ones before it.
 *
 * @example
 * const b = loadVegaBundles();
 * b.vega.length; // ≈ 520 000 characters of JavaScript
 */
export interface VegaBundles {
  readonly vega: string;
  readonly vegaLite: string;
  readonly vegaEmbed: string;
}

// The packages' `exports` maps expose neither `build/*.min.js` nor `package.json`, so each
// bundle is found beside the entry point the map does expose (all three live in `build/`).
const SOURCES = [
  ['vega', 'vega', 'vega.min.js'],
  ['vegaLite', 'vega-lite', 'vega-lite.min.js'],
  ['vegaEmbed', 'vega-embed', 'vega-embed.min.js'],
] as const;

let cached: VegaBundles | undefined;

/**
 * Reads the three bundles from the runner's dependencies, once per process.
 *
 * @throws Error naming the missing file when a package's layout is not the expected one.
 */
export function loadVegaBundles(): VegaBundles {
  if (cached !== undefined) return cached;
  const require = createRequire(import.meta.url);
  const out: Record<string, string> = {};
  for (const [key, pkg, file] of SOURCES) {
    const path = join(dirname(require.resolve(pkg)), file);
    try {
      out[key] = readFileSync(path, 'utf8');
    } catch (cause) {
      throw new Error(`loadVegaBundles: cannot read the ${pkg} browser bundle at ${path}`, {
        cause,
      });
    }
  }
  cached = out as unknown as VegaBundles;
  return cached;
}
