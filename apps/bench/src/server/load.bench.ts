/**
 * `pnpm bench:server-load`: a benchmark, not a test. A bounded load run of `bfe serve` over
 * 127.0.0.1, as issue 15 asks: one tenant (API key) per LoCoMo conversation, each with its own
 * bank of that conversation's turns (the real MiniLM model); then autocannon searches — each
 * request a LoCoMo question (text only: no label is read) sent by its conversation's tenant
 * to its bank — with 1 and 8 connections, without and with concurrent adds (one add of one
 * memory at a time, to a random tenant, for the whole run). After each run with adds, every
 * acknowledged add is read back (`GET`): a missing one is a lost write.
 *
 * The server is apps/server's own bin, run as a child process (apps are never imported); the
 * peer row is `GET /healthz` through the same server and client (the HTTP floor).
 *
 * Timings on a shared machine are noisy: the load average is printed beside them.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:server-load --seconds 10
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { MemoryStore } from '@bfe/store';
import { positive } from '../shared/args.js';
import { note, out } from '../shared/output.js';
import { terminalTableLines } from '@bfe/core';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    work: { type: 'string' },
    markdown: { type: 'boolean', default: false },
  },
});
const seconds = positive('--seconds', values.seconds);

const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
const banks = [...new Set(loaded.benchmark.memories.map((m) => m.bankId))].sort();
const bankOf = new Map(banks.map((b, i) => [b, `t${i}`]));
const keyOf = new Map(banks.map((_b, i) => [`t${i}`, `tenant-${i}-key-${'x'.repeat(16)}`]));
// Queries: text and the tenant of their conversation only (never relevance labels).
const queries = loaded.benchmark.queries.flatMap((q) =>
  (q.candidateBankIds ?? []).slice(0, 1).map((b) => ({ bank: bankOf.get(b)!, text: q.text })),
);

const work = values.work ?? (await mkdtemp(join(tmpdir(), 'bfe-server-load-')));
const keysFile = join(work, 'keys.json');
await writeFile(
  keysFile,
  JSON.stringify(
    Object.fromEntries([...keyOf].map(([bank, key]) => [key, { banks: [bank], write: true }])),
  ),
);
const bin = fileURLToPath(new URL('../../../server/src/bin.ts', import.meta.url));
const child = spawn(
  process.execPath,
  [
    '--conditions=@bfe/source',
    '--import',
    import.meta.resolve('tsx'),
    bin,
    ...['--store', join(work, 'store'), '--port', '0', '--keys', keysFile],
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const url = await new Promise<string>((resolve, reject) => {
  createInterface({ input: child.stdout }).once('line', (l) =>
    resolve(l.replace('listening on ', '')),
  );
  child.once('exit', (code) => reject(new Error(`bfe serve exited ${code}`)));
});
note(`bfe serve at ${url}, work ${work}`);

const headers = (bank: string): Record<string, string> => ({
  'content-type': 'application/json',
  authorization: `Bearer ${keyOf.get(bank)!}`,
});

// Fill: each conversation's turns into its tenant's bank, 64 per request.
const t0 = performance.now();
for (const b of banks) {
  const bank = bankOf.get(b)!;
  const mine = loaded.benchmark.memories.filter((m) => m.bankId === b);
  for (let i = 0; i < mine.length; i += 64) {
    const memories = mine.slice(i, i + 64).map((m) => ({ id: m.id, text: m.text }));
    const res = await fetch(`${url}/v1/banks/${bank}/memories`, {
      method: 'POST',
      headers: headers(bank),
      body: JSON.stringify({ memories }),
    });
    if (res.status !== 200) throw new Error(`fill: ${res.status} ${await res.text()}`);
  }
}
const memories = loaded.benchmark.memories.length;
note(
  `filled ${banks.length} banks, ${memories} memories in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);

/** Adds one memory at a time to random tenants until `stop`; returns the acknowledged ones. */
function writer(stop: { done: boolean }): Promise<{ bank: string; id: string }[]> {
  const acked: { bank: string; id: string }[] = [];
  let n = 0;
  return (async () => {
    while (!stop.done) {
      const bank = `t${n % banks.length}`;
      const id = `load-${Date.now()}-${n++}`;
      const res = await fetch(`${url}/v1/banks/${bank}/memories`, {
        method: 'POST',
        headers: headers(bank),
        body: JSON.stringify({ memories: [{ id, text: `a new memory number ${n} for ${bank}` }] }),
      });
      if (res.status === 200) acked.push({ bank, id });
      else await res.text();
    }
    return acked;
  })();
}

interface Row {
  readonly name: string;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
  readonly adds: string;
  readonly load: number;
}

async function run(
  name: string,
  connections: number,
  path: 'search' | 'healthz',
  adds: boolean,
): Promise<Row> {
  note(`${name}: ${seconds} s`);
  let next = 0;
  const stop = { done: false };
  const writing = adds ? writer(stop) : undefined;
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          if (path === 'healthz') return { ...req, method: 'GET', path: '/healthz' };
          const q = queries[next++ % queries.length]!;
          return {
            ...req,
            method: 'POST',
            path: `/v1/banks/${q.bank}/search`,
            headers: headers(q.bank),
            body: JSON.stringify({ query: q.text, k: 10 }),
          };
        },
      },
    ],
  });
  stop.done = true;
  let addsCell = '';
  if (writing !== undefined) {
    const acked = await writing;
    let lost = 0;
    for (const { bank, id } of acked) {
      const res = await fetch(`${url}/v1/banks/${bank}/memories/${id}`, { headers: headers(bank) });
      if (res.status !== 200) lost++;
      await res.text();
    }
    addsCell = `${acked.length} acked, ${lost} lost`;
  }
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    adds: addsCell,
    load: loadavg()[0]!,
  };
}

const rows: Row[] = [];
try {
  rows.push(await run('healthz, 1 connection (peer)', 1, 'healthz', false));
  rows.push(await run('search, 1 connection', 1, 'search', false));
  rows.push(await run('search, 8 connections', 8, 'search', false));
  rows.push(await run('search, 1 connection + adds', 1, 'search', true));
  rows.push(await run('search, 8 connections + adds', 8, 'search', true));
} finally {
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  note(`bfe serve exited ${code}`);
}
// Peer: the same searches through `MemoryStore.search` in this process, one at a time, on the
// store the server just closed (no HTTP, no JSON, same evidence).
try {
  note(`store.search in process: ${seconds} s`);
  const store = await MemoryStore.open(join(work, 'store'));
  const times: number[] = [];
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const q = queries[i % queries.length]!;
    const t = performance.now();
    await store.search({ bank: q.bank, query: q.text, k: 10 });
    times.push(performance.now() - t);
  }
  await store.close();
  times.sort((a, b) => a - b);
  const at = (p: number): number =>
    times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
  rows.push({
    name: 'store.search in process, 1 at a time (peer)',
    rps: times.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    errors: 0,
    non2xx: 0,
    adds: '',
    load: loadavg()[0]!,
  });
} finally {
  if (values.work === undefined) await rm(work, { recursive: true, force: true });
}
for (const line of terminalTableLines({
  head: ['run', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'adds', 'load'],
  align: ['left', 'right', 'right', 'right', 'right', 'right', 'left', 'right'],
  rows: rows.map((r) => [
    r.name,
    r.rps.toFixed(1),
    r.p50.toFixed(0),
    r.p99.toFixed(0),
    String(r.errors),
    String(r.non2xx),
    r.adds,
    r.load.toFixed(2),
  ]),
  style: values.markdown ? 'markdown' : 'plain',
}))
  out(line);
out(JSON.stringify({ seconds, banks: banks.length, memories, queries: queries.length, rows }));
