/** The CLI of `pnpm bench:big-bank --segmented-build | --segmented-search` (`segmented.ts`, `segmented-search.ts`). */
import { buildSegments } from './segmented.js';
import { searchSegments } from './segmented-search.js';

/** `--segmented-build` / `--segmented-search` of `pnpm bench:big-bank`: prints the JSON result. */
export async function runSegmented(
  v: Record<string, string | boolean | undefined>,
  k: number,
): Promise<void> {
  const str = (key: string): string => {
    const s = v[key];
    if (typeof s !== 'string') throw new Error(`--${key} is required`);
    return s;
  };
  const segments = typeof v.segments === 'string' ? Number(v.segments) : undefined;
  let out: unknown;
  if (v['segmented-build'] === true) {
    const codec = str('codec');
    if (codec !== 'sq8' && codec !== 'sq4') throw new Error(`--codec sq8 | sq4, got ${codec}`);
    out = await buildSegments({
      banks: str('bank').split(','),
      real: v.real === true,
      keepVectors: v['keep-vectors'] === true,
      dir: str('index'),
      segmentTokens: Number(str('segment-tokens')),
      segments: segments ?? 20,
      codec,
      sample: Number(str('sample')),
      M: Number(str('M')),
      efConstruction: Number(str('ef-construction')),
      threads: Number(str('threads')),
      noise: Number(str('noise')),
      seed: 7,
      queries: Number(str('queries')),
      rows: Number(str('rows')),
      k,
    });
  } else {
    out = await searchSegments(str('index'), {
      ...(segments === undefined ? {} : { segments }),
      efSearch: str('ef-search').split(',').map(Number),
      threads: Number(str('threads')),
      codesInRam: v['codes-in-ram'] === true,
      ...(typeof v.margin === 'string' ? { margin: Number(v.margin) } : {}),
      ...(typeof v['rows-per-query'] === 'string'
        ? { rowsPerQuery: Number(v['rows-per-query']) }
        : {}),
    });
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}
