/**
 * `pnpm bench:big-bank --segmented-search`: bfe's search over a segmented build (`segmented.ts`):
 * `HnswTokenIndex.load` over the segments as banks (`memoryBank`: one graph per segment, each
 * searched whole, `k + 16` proposals each), graphs memory-mapped (`view`), every proposal
 * rescored in float64 from the codes — read by position from `codes.bin` (`fileCodeSource`), or
 * with `--codes-in-ram` held in memory.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HnswTokenIndex, codecModelSchema, fileCodeSource, type CodecModel } from '@bfe/index';
import { median, quantile } from '../shared/stats.js';
import { recallAt } from './measure.js';
import { loadavg, readF32 } from './scale.js';
import { readSegmentedMeta } from './segmented.js';

const peakRssMb = (): number => process.resourceUsage().maxRSS / 1024;

/** Resident MiB now: anonymous (heap, arrays) and file-backed (touched pages of mapped files). */
function rssNow(): { anon: number; file: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (name: string): number =>
    Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
}

export interface SegmentedSearchOptions {
  /** Segments searched (the first S; default all built). */
  readonly segments?: number;
  readonly efSearch: readonly number[];
  readonly threads: number;
  /** Codes read whole into memory instead of by position. */
  readonly codesInRam: boolean;
  /** Rows per searched query (default the build's `rows`; must divide it): shorter queries. */
  readonly rowsPerQuery?: number;
}

/**
 * One query at a time (all its rows, k) through `HnswTokenIndex` over the first S segments'
 * graphs (viewed), at each `efSearch`: p50 / p90 per query over the sample (after a warm-up
 * pass), token recall@k vs `exact-<S>.json`, the process's peak RSS.
 */
export async function searchSegments(dir: string, o: SegmentedSearchOptions): Promise<object[]> {
  const meta = readSegmentedMeta(dir);
  const S = o.segments ?? meta.segments.length;
  if (S < 1 || S > meta.segments.length) {
    throw new Error(`${dir} has ${meta.segments.length} segments built, asked for ${S}`);
  }
  const { dim, k, memoryTokens, segmentTokens } = meta;
  const rows = o.rowsPerQuery ?? meta.rows;
  if (!(rows >= 1 && meta.rows % rows === 0)) {
    throw new Error(`--rows-per-query ${rows} must divide the build's ${meta.rows} rows`);
  }
  const queries = (meta.queries * meta.rows) / rows;
  const n = S * segmentTokens;
  const model = codecModelSchema.parse(
    JSON.parse(readFileSync(join(dir, 'codec.json'), 'utf8')),
  ) as CodecModel;
  const codesPath = join(dir, 'codes.bin');
  const t0 = performance.now();
  const onDisk = fileCodeSource({
    path: codesPath,
    bytesPerToken: model.bytesPerToken,
    segments: [{ offset: 0, rows: n }],
  });
  let codes: Uint8Array | typeof onDisk = onDisk;
  if (o.codesInRam) {
    // The first S segments' codes, copied into memory one segment at a time.
    codes = new Uint8Array(n * model.bytesPerToken);
    for (let a = 0; a < n; a += segmentTokens) {
      codes.set(onDisk.bytes(a, a + segmentTokens), a * model.bytesPerToken);
    }
  }
  const codesS = (performance.now() - t0) / 1000;
  const memories = Math.ceil(n / memoryTokens);
  const tokenOffsets = Int32Array.from({ length: memories + 1 }, (_, m) =>
    Math.min(n, m * memoryTokens),
  );
  const memoryBank = Int32Array.from({ length: memories }, (_, m) =>
    Math.floor((m * memoryTokens) / segmentTokens),
  );
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  const q = readF32(join(dir, 'queries.f32'), meta.queries * meta.rows * dim);
  const ref = Int32Array.from(JSON.parse(readFileSync(join(dir, `exact-${S}.json`), 'utf8')));
  let graphBytes = 0;
  for (let s = 0; s < S; s++) graphBytes += statSync(join(dir, `bank-${s}.usearch`)).size;
  const out: object[] = [];
  for (const ef of o.efSearch) {
    const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: ef };
    const t1 = performance.now();
    const index = await HnswTokenIndex.load(
      dir,
      { model, codes, tokenOffsets, memoryBank },
      params,
      {
        kind: 'i8',
        view: true,
        openGraphs: S,
        threads: o.threads,
      },
    );
    const loadS = (performance.now() - t1) / 1000;
    const latencies: number[] = [];
    let recall = 0;
    let widened = 0;
    let anon = 0;
    let file = 0;
    for (let rep = -1; rep < 1; rep++) {
      for (let i = 0; i < queries; i++) {
        const s = performance.now();
        const hits = await index.search(q.subarray(i * rows * dim), rows, k, { memories: all });
        const now = rssNow();
        anon = Math.max(anon, now.anon);
        file = Math.max(file, now.file);
        if (rep < 0) continue; // warm-up pass: maps the graphs, pages them in
        latencies.push(performance.now() - s);
        widened += hits.widenedRows ?? 0;
        recall += recallAt(hits.tokens, ref.subarray(i * rows * k), rows, k) / queries;
      }
    }
    index.dispose();
    out.push({
      what: `segmented hnsw i8 over ${meta.codec}, ${S} × ${segmentTokens} tokens, ef ${ef}, margin 16, codes ${o.codesInRam ? 'in RAM' : 'by position'}`,
      tokens: n,
      segments: S,
      efSearch: ef,
      p50: median(latencies),
      p90: quantile(latencies, 0.9),
      recall,
      widenedRows: widened,
      queries,
      rows,
      graphBytes,
      codeBytes: n * model.bytesPerToken,
      loadS,
      codesS,
      peakRssMb: peakRssMb(),
      maxRssAnonMb: anon,
      maxRssFileMb: file,
      load: loadavg(),
    });
  }
  onDisk.close();
  return out;
}
