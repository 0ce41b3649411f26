/**
 * `pnpm bench:encoder`: a benchmark, not a test. Encodes every LoCoMo turn (the memories
 * exactly as bfe's loader builds them) with bfe, with transformers.js (feature-extraction
 * pipeline on the same ONNX file) and with sentence-transformers on the CPU torch, each in its
 * own child process, and prints wall seconds, tokens/s, peak RSS and bfe's speed ratios.
 *
 * Tokens are real tokens, special tokens included (the sum of the attention masks), counted
 * once with the model's tokenizer at `--max-length`; every peer reports its own count too,
 * and a mismatch is printed. A peer that cannot run is reported as unavailable, never skipped
 * silently.
 *
 * Files: `cli.ts` (flags), `model.ts` (model directory, Hugging Face layout), `plan.ts` (what
 * to measure), `measure.ts` (child processes, retries), `worker.ts` (bfe and transformers.js
 * in a child), `report.ts` (fastest tries, agreement, ratios), `print.ts` (the table).
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:encoder
 * pnpm bench:encoder --peers bfe --bfe-threads 1,2 --max-batch-tokens 4096,8192,16384
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { TextTokenizer } from '@bfe/encoder';
import { runScript } from '../shared/cli.js';
import { note, printJson } from '../shared/table.js';
import { parseCli } from './cli.js';
import { measurePlans } from './measure.js';
import { resolveModel } from './model.js';
import { planRuns, sampleIndices, type Row } from './plan.js';
import { printReport } from './print.js';
import { summarize } from './report.js';

async function main(): Promise<void> {
  const cli = parseCli();
  const log = cli.json ? () => true : note;
  const { dir: modelDir, manifest, how } = await resolveModel(cli);
  log(`model: ${modelDir} (${how})`);

  const loaded = await loadDataset(cli.dataset, { location: dataLocationFromEnv() });
  const all = loaded.benchmark.memories.map((m) => m.text);
  // --texts: an evenly spaced subset (so every part of the dataset is in it), in dataset order.
  const texts =
    cli.texts === undefined || cli.texts >= all.length
      ? all
      : Array.from(
          { length: cli.texts },
          (_, i) => all[Math.floor((i * all.length) / cli.texts!)]!,
        );
  const tokenizer = new TextTokenizer(join(modelDir, manifest.tokenizerFile), cli.maxLength);
  const tokenized = await tokenizer.encode(texts);
  let tokens = 0;
  let truncated = 0;
  for (const t of tokenized) {
    tokens += t.ids.length;
    if (t.truncated) truncated++;
  }
  log(
    `${cli.dataset}: ${texts.length} memories, ${tokens} tokens at max length ${cli.maxLength} (${truncated} truncated)`,
  );

  const sample = sampleIndices(tokenized.map((t) => t.ids.length));
  const work = await mkdtemp(join(tmpdir(), 'bfe-bench-encoder-'));
  const rows: Row[] = [];
  try {
    const textsFile = join(work, 'texts.json');
    await writeFile(textsFile, JSON.stringify(texts));
    const plans = await planRuns(cli, modelDir, manifest, work, rows);
    await measurePlans(cli, plans, { textsFile, work, sample, tokens }, rows, log);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const report = summarize(
    cli,
    { modelDir, manifest, texts: texts.length, tokens, truncated, tokenized, sample },
    rows,
  );
  if (!cli.json) printReport(report);
  printJson(report);
  if (!rows.some((r) => r.peer === 'bfe' && r.result.ok) && cli.peers.includes('bfe'))
    process.exitCode = 1;
}

await runScript('bench:encoder', main);
