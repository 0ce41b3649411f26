/**
 * `pnpm bench:index`: a benchmark, not a test. For each codec (fp32, fp16, sq8, sq4, rp128+sq4)
 * × {exact over decoded codes, HNSW per-bank indexes over decoded codes}, proposals rescored in
 * float64 from the decoded codes: bytes per token, token top-k recall@64 vs exact fp32 on the
 * same query tokens, build time, per-query latency (one query, all its tokens, k = 64, its own
 * bank only). Then per-bank vs filtered HNSW, the faiss-cpu peer, and one query on a big bank.
 *
 * pnpm bench:index --bank /tmp/i13a/bank --queries 30 --synthetic 50000 --big 200000
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildHnsw } from '@bfe/index';
import type { CodecName, HnswParams } from '@bfe/index';
import { quantile, median } from '../shared/stats.js';
import { terminalTableLines } from '@bfe/core';
import { locomoBank, syntheticBank } from './banks.js';
import { filterVsBanked } from './filtering.js';
import { bankMembers, exactTopK, measureCodec, reference } from './measure.js';
import type { BenchBank, Row } from './measure.js';
import { faissPeer } from './peers.js';

const K = 64;
/** Predeclared HNSW parameters. */
const PARAMS: HnswParams = { M: 16, efConstruction: 128, efSearch: 128 };
const CODECS: CodecName[] = ['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4'];

const { values } = parseArgs({
  options: {
    bank: { type: 'string' },
    queries: { type: 'string', default: '30' },
    synthetic: { type: 'string', default: '50000' },
    'many-banks': { type: 'string', default: '50000' },
    big: { type: 'string', default: '0' },
    python: { type: 'string', default: '/tmp/bfe-bench-venv/bin/python' },
    codecs: { type: 'string', default: CODECS.join(',') },
  },
});
const ms = (x: number): string => x.toFixed(1);
const log = (s: string): void => void process.stdout.write(`${s}\n`);

async function codecTable(bank: BenchBank): Promise<void> {
  const members = bankMembers(bank);
  const ref = reference(bank, members, K);
  const rows: Row[] = [];
  for (const codec of values.codecs.split(',') as CodecName[]) {
    rows.push(...(await measureCodec(bank, members, ref, codec, PARAMS, K)));
    log(`  ${bank.name} ${codec} done`);
  }
  log(
    `\n${bank.name}: ${bank.n} tokens, ${members.size} banks, ${bank.queries.length} queries, k = ${K}, HNSW M/efC/efS ${PARAMS.M}/${PARAMS.efConstruction}/${PARAMS.efSearch}, one thread`,
  );
  const lines = terminalTableLines({
    head: ['codec', 'search', 'B/token', 'total MB', 'recall@64', 'build s', 'p50 ms', 'p90 ms'],
    align: ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
    rows: rows.map((r) => [
      r.codec,
      r.search,
      String(r.bytesPerToken),
      (r.totalBytes / 1e6).toFixed(1),
      r.recall.toFixed(4),
      r.buildS.toFixed(1),
      ms(median(r.latencies)),
      ms(quantile(r.latencies, 0.9)),
    ]),
  });
  lines.forEach(log);
}

async function filterTable(banks: BenchBank[]): Promise<void> {
  const rows = [];
  for (const b of banks)
    rows.push(...(await filterVsBanked(b, reference(b, bankMembers(b), K), PARAMS, K)));
  log('\nper-bank indexes vs one filtered index (fp32, HNSW, one thread)');
  terminalTableLines({
    head: ['bank', 'banks', 'strategy', 'build s', 'recall@64', 'p50 ms', 'p90 ms'],
    align: ['left', 'right', 'left', 'right', 'right', 'right', 'right'],
    rows: rows.map((r) => [
      r.bank,
      String(r.banks),
      r.strategy,
      r.buildS.toFixed(1),
      r.recall.toFixed(4),
      ms(median(r.latencies)),
      ms(quantile(r.latencies, 0.9)),
    ]),
  }).forEach(log);
}

async function bigBank(n: number): Promise<void> {
  const bank = syntheticBank('big', n, 384, 1, 10, 44);
  let t0 = performance.now();
  const index = await buildHnsw(bank.vectors, n, 384, PARAMS, { buildThreads: 0 });
  const buildS = (performance.now() - t0) / 1000;
  const all = Int32Array.from({ length: n }, (_, i) => i);
  const h: number[] = [];
  const e: number[] = [];
  for (const q of bank.queries) {
    t0 = performance.now();
    index.search(q.tokens, q.rows, K);
    h.push(performance.now() - t0);
  }
  for (const q of bank.queries.slice(0, 3)) {
    t0 = performance.now();
    exactTopK(bank.vectors, 384, all, q.tokens, q.rows, K);
    e.push(performance.now() - t0);
  }
  log(
    `\nbig bank: ${n} tokens, one query of 16 tokens, k = ${K}: HNSW build ${buildS.toFixed(1)} s (all cores), p50 ${ms(median(h))} ms, p90 ${ms(quantile(h, 0.9))} ms; exact (plain JS float64 scan, one thread) p50 ${ms(median(e))} ms`,
  );
}

const work = await mkdtemp(join(tmpdir(), 'bfe-bench-index-'));
const synthetic = syntheticBank(
  'synthetic',
  Number(values.synthetic),
  384,
  10,
  Number(values.queries),
  42,
);
await codecTable(synthetic);
const locomo =
  values.bank === undefined ? undefined : await locomoBank(values.bank, Number(values.queries));
if (locomo !== undefined) await codecTable(locomo);
const many = syntheticBank(
  '1000-banks',
  Number(values['many-banks']),
  384,
  1000,
  Number(values.queries),
  43,
);
await filterTable([...(locomo ? [locomo] : []), synthetic, many]);
const peerBank = locomo ?? synthetic;
const peer = await faissPeer(peerBank, 0, PARAMS, K, work, values.python);
log(
  `\npeer on ${peerBank.name} bank 0 (${peer.tokens} tokens, ${peer.queryTokens} query tokens, one thread):`,
);
log(
  `  bfe HNSW (usearch): build ${peer.bfe.buildS.toFixed(1)} s, ${peer.bfe.qps.toFixed(0)} qps, recall@64 ${peer.bfe.recall.toFixed(4)}`,
);
if (typeof peer.faiss === 'string') log(`  faiss: ${peer.faiss}`);
else {
  const f = peer.faiss;
  log(
    `  faiss IndexHNSWFlat: build ${f.hnsw.build_s.toFixed(1)} s, ${f.hnsw.qps.toFixed(0)} qps, recall@64 ${f.hnsw.recall.toFixed(4)}`,
  );
  if (f.ivfpq)
    log(
      `  faiss IVF-PQ (48 B/token, nprobe 16): build ${f.ivfpq.build_s.toFixed(1)} s, ${f.ivfpq.qps.toFixed(0)} qps, recall@64 ${f.ivfpq.recall.toFixed(4)}`,
    );
  log(
    `  bfe HNSW qps / faiss HNSW qps = ${(peer.bfe.qps / f.hnsw.qps).toFixed(2)} (recall ${peer.bfe.recall.toFixed(4)} vs ${f.hnsw.recall.toFixed(4)})`,
  );
}
if (Number(values.big) > 0) await bigBank(Number(values.big));
