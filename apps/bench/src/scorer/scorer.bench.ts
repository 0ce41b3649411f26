/**
 * `pnpm bench:scorer`: a benchmark, not a test. Exact bank-wide top-k (METHOD.md §2) of bfe's
 * CPU scorer (onnxruntime Gemm + TopK, streamed chunks, running merge, float64 re-ranking)
 * against numpy (BLAS matmul + argpartition, same chunks) and faiss-cpu (`IndexFlatIP` +
 * search k) on the same shapes and the same vectors, in the same run:
 *
 * - similarities per second (query rows × bank tokens / search seconds) at bank sizes 1e4,
 *   1e5, 1e6 and 1e7 tokens, d = 384, k = 64, for one query (20 rows) and a batch (256 rows);
 * - the latency of one query (20 tokens, k = 64) against a 50k-token bank;
 * - the peak RSS of each process.
 *
 * Every size runs in fresh child processes, one peer family at a time (bfe:
 * `scorer-worker.ts`; numpy and faiss: `python/scorer_peers.py` in a venv with numpy and
 * faiss-cpu). Both generate the bank with the same hash (`synthetic.ts`), so their top-k lists
 * are compared too. Banks above `--pool` tokens are streamed from a pool of distinct tokens
 * with rolled components (see `protocol.ts`); preparing those chunks is not timed, for any
 * peer. Other processes' CPU use during each run is measured and shown, since a shared
 * machine can skew everything.
 *
 * Files: `cli.ts` (flags), `measure.ts` (child processes), `scorer-worker.ts` (bfe in a child),
 * `synthetic.ts` (the shared bank hash), `report.ts` (medians, ratios), `print.ts` (tables).
 *
 * @example
 * pnpm bench:scorer
 * pnpm bench:scorer --sizes 10000,100000 --rows 20 --json
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runScript } from '../shared/cli.js';
import { note, printJson } from '../shared/table.js';
import { parseCli } from './cli.js';
import { measureSizes } from './measure.js';
import { printReport } from './print.js';
import { summarize } from './report.js';

async function main(): Promise<void> {
  const cli = parseCli();
  const log = cli.json ? () => true : note;
  const work = await mkdtemp(join(tmpdir(), 'bfe-bench-scorer-'));
  let sizes;
  try {
    sizes = await measureSizes(cli, work, log);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const report = summarize(cli, sizes);
  if (cli.json) printJson(report);
  else printReport(cli, report);
}

await runScript('bench:scorer', main);
