/** `pnpm bench:big-bank --segmented-build | --segmented-search` (`segmented.ts`, `segmented-search.ts`). */
import { printJson } from '../shared/table.js';
import { bankDir, type BigBankOptions } from './big-bank-cli.js';
import { buildSegments } from './segmented.js';
import { searchSegments } from './segmented-search.js';

/** `--segmented-build` / `--segmented-search` of `pnpm bench:big-bank`: prints the JSON result. */
export async function runSegmented(o: BigBankOptions): Promise<void> {
  const dir = o.index;
  if (o.segmentedBuild === true) {
    printJson(
      await buildSegments({
        banks: bankDir(o).split(','),
        real: o.real === true,
        keepVectors: o.keepVectors === true,
        dir,
        segmentTokens: o.segmentTokens,
        segments: o.segments ?? 20,
        codec: o.codec,
        sample: o.sample,
        M: o.M,
        efConstruction: o.efConstruction,
        threads: o.threads,
        noise: o.noise,
        seed: 7,
        queries: o.queries,
        rows: o.rows,
        k: o.k,
      }),
    );
    return;
  }
  printJson(
    await searchSegments(dir, {
      ...(o.segments === undefined ? {} : { segments: o.segments }),
      efSearch: o.efSearch,
      threads: o.threads,
      codesInRam: o.codesInRam === true,
      ...(o.rowsPerQuery === undefined ? {} : { rowsPerQuery: o.rowsPerQuery }),
    }),
  );
}
