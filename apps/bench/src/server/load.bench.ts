/**
 * `pnpm bench:server-load`: a benchmark, not a test. A bounded load run of `bfe serve` over
 * 127.0.0.1, as issue 15 asks: one tenant (API key) per LoCoMo conversation, each with its own
 * bank of that conversation's turns (the real MiniLM model); then autocannon searches — each
 * request a LoCoMo question (text only: no label is read) sent by its conversation's tenant
 * to its bank — with 1 and 8 connections, without and with concurrent adds (one add of one
 * memory at a time, to a random tenant, for the whole run). After each run with adds, every
 * acknowledged add is read back (`GET`): a missing one is a lost write. Each server first
 * answers two searches to every bank, not counted (its views and resident kernels built).
 *
 * The server is apps/server's own bin, run as a child process (apps are never imported); the
 * peer row is `GET /healthz` through the same server and client (the HTTP floor). Each row also
 * reports the server process's CPU time (every thread) per request: on a shared machine it moves
 * far less than throughput does; and its main thread's alone (`loop ms/req`: the event loop, which
 * serves every request); and the share of the machine's CPU time left idle (`idle %`, every
 * process): a server held back by its own scheduling leaves cores idle, one held back by CPU
 * does not.
 *
 * Every path serves its own copy of one filled store (`<work>/store-filled`, filled once and
 * never served, so that `--work … --reuse` measures the same store every run, whatever earlier
 * runs added). `--compare` runs two servers side by side, each row for both, alternating: `new`
 * (the server's defaults: one onnxruntime thread per session, queries encoded on worker threads,
 * coalesced; resident kernels on another) and `old` (`--threads 0 --encode-workers 0
 * --kernel-workers 0`: the previous defaults, onnxruntime's own thread count and every encode on
 * the event loop), and
 * prints the new/old ratios. `--server-args="…"` (with `=`: the value starts with a dash) adds
 * arguments to the (new) server; `--old-args="…"` replaces the old path's arguments, and
 * `--old-bin PATH` runs the old path from another checkout's `apps/server/src/bin.ts` (e.g. the
 * previous commit's code, `--old-args=""` for its defaults).
 *
 * `--many-tenants 1000` adds, on a server and store of their own, the 1,000-tenant rows and the
 * rate-limit pair (one key over its rate beside well-behaved tenants): `tenant-rows.ts`.
 *
 * Timings on a shared machine are noisy: the load average is printed beside them.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:server-load --seconds 10 --compare
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { MANIFEST_FILE, MemoryStore } from '@bfe/store';
import { benchCommand, flag, parseCommand, positive } from '../shared/cli.js';
import { note, out, printJson, printTable } from '../shared/table.js';
import {
  cpuMark,
  rowOf,
  startServer as startOne,
  stopServer,
  type Row,
  type Server,
} from './load-server.js';

const command = benchCommand(
  'bench:server-load',
  'a bounded load run of bfe serve on LoCoMo: searches with 1 and 8 connections, with and without adds',
)
  .addOption(flag('--seconds <s>', 'per run', positive, '10'))
  .option('--work <dir>', 'keep the stores here (default: a temporary folder, removed)')
  .option('--markdown', 'print the table as Markdown')
  .option('--compare', 'run the new and the old server path side by side')
  .option('--server-args <args>', 'more arguments of the (new) server; --server-args="…"', '')
  .option(
    '--old-args <args>',
    "the old path's server arguments",
    '--threads 0 --encode-workers 0 --kernel-workers 0',
  )
  .option('--old-bin <path>', "the old path's apps/server/src/bin.ts (another checkout)")
  .option('--reuse', 'with --work: skip the fill when <work>/store-filled holds a store')
  .addOption(
    flag(
      '--many-tenants <n>',
      'also the many-tenant rows (n tenants, e.g. 1000) and the rate-limit row (tenant-rows.ts)',
      positive,
    ),
  );
const { options } = parseCommand<{
  seconds: number;
  work?: string;
  markdown?: boolean;
  compare?: boolean;
  serverArgs: string;
  oldArgs: string;
  oldBin?: string;
  reuse?: boolean;
  manyTenants?: number;
}>(command);
const { seconds } = options;
/** Server arguments of each path compared (`new`: the defaults). */
const PATHS: Record<string, string[]> = {
  new: options.serverArgs.split(/\s+/).filter((a) => a.length > 0),
  old: options.oldArgs.split(/\s+/).filter((a) => a.length > 0),
};
const paths = options.compare ? ['old', 'new'] : ['new'];

const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
const banks = [...new Set(loaded.benchmark.memories.map((m) => m.bankId))].sort();
const bankOf = new Map(banks.map((b, i) => [b, `t${i}`]));
const keyOf = new Map(banks.map((_b, i) => [`t${i}`, `tenant-${i}-key-${'x'.repeat(16)}`]));
// Queries: text and the tenant of their conversation only (never relevance labels).
const queries = loaded.benchmark.queries.flatMap((q) =>
  (q.candidateBankIds ?? []).slice(0, 1).map((b) => ({ bank: bankOf.get(b)!, text: q.text })),
);

const work = options.work ?? (await mkdtemp(join(tmpdir(), 'bfe-server-load-')));
await mkdir(work, { recursive: true });
const keysFile = join(work, 'keys.json');
await writeFile(
  keysFile,
  JSON.stringify(
    Object.fromEntries([...keyOf].map(([bank, key]) => [key, { banks: [bank], write: true }])),
  ),
);
const ownBin = fileURLToPath(new URL('../../../server/src/bin.ts', import.meta.url));
const bins: Record<string, string> = { new: ownBin, old: options.oldBin ?? ownBin };

const startServer = (path: string, store: string): Promise<Server> =>
  startOne(path, bins[path]!, store, keysFile, PATHS[path]!);

const headers = (bank: string): Record<string, string> => ({
  'content-type': 'application/json',
  authorization: `Bearer ${keyOf.get(bank)!}`,
});

// Fill: each conversation's turns into its tenant's bank, 64 per request, through a server on
// `<work>/store-filled`; each path then serves a copy of it. The filled store itself is never
// served, so no row's adds reach another row's or another run's store (`--reuse`).
const filled = join(work, 'store-filled');
const stores = Object.fromEntries(paths.map((p) => [p, join(work, `store-${p}`)]));
// Judged before a server opens the store (opening writes a manifest).
const reused = options.reuse && existsSync(join(filled, MANIFEST_FILE));
const t0 = performance.now();
if (!reused) {
  await rm(filled, { recursive: true, force: true });
  const filler = await startServer(paths[0]!, filled);
  try {
    for (const b of banks) {
      const bank = bankOf.get(b)!;
      const mine = loaded.benchmark.memories.filter((m) => m.bankId === b);
      for (let i = 0; i < mine.length; i += 64) {
        const memories = mine.slice(i, i + 64).map((m) => ({ id: m.id, text: m.text }));
        const res = await fetch(`${filler.url}/v1/banks/${bank}/memories`, {
          method: 'POST',
          headers: headers(bank),
          body: JSON.stringify({ memories }),
        });
        if (res.status !== 200) throw new Error(`fill: ${res.status} ${await res.text()}`);
      }
    }
  } finally {
    await stopServer(filler);
  }
}
const memories = loaded.benchmark.memories.length;
note(
  reused
    ? `reused the filled store in ${filled}`
    : `filled ${banks.length} banks, ${memories} memories in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
for (const p of paths) {
  await rm(stores[p]!, { recursive: true, force: true });
  await cp(filled, stores[p]!, { recursive: true });
}
const servers: Server[] = [];
for (const p of paths) servers.push(await startServer(p, stores[p]!));

/** Adds one memory at a time to random tenants until `stop`; returns the acknowledged ones. */
function writer(url: string, stop: { done: boolean }): Promise<{ bank: string; id: string }[]> {
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

async function run(
  server: Server,
  name: string,
  connections: number,
  kind: 'search' | 'healthz',
  adds: boolean,
  firstQuery: number,
): Promise<Row> {
  note(`${server.path}: ${name}: ${seconds} s`);
  const { url } = server;
  let next = firstQuery;
  const stop = { done: false };
  const mark = cpuMark(server);
  const writing = adds ? writer(url, stop) : undefined;
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          if (kind === 'healthz') return { ...req, method: 'GET', path: '/healthz' };
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
  let acked: { bank: string; id: string }[] = [];
  if (writing !== undefined) {
    acked = await writing;
    let lost = 0;
    for (const { bank, id } of acked) {
      const res = await fetch(`${url}/v1/banks/${bank}/memories/${id}`, { headers: headers(bank) });
      if (res.status !== 200) lost++;
      await res.text();
    }
    addsCell = `${acked.length} acked, ${lost} lost`;
  }
  const requests = result.requests.total + acked.length;
  return rowOf(name, server, result, mark, requests, addsCell);
}

const KINDS = [
  ['healthz, 1 connection (peer)', 1, 'healthz', false],
  ['search, 1 connection', 1, 'search', false],
  ['search, 8 connections', 8, 'search', false],
  ['search, 1 connection + adds', 1, 'search', true],
  ['search, 8 connections + adds', 8, 'search', true],
] as const;
/**
 * Two searches to every bank of `server` (its views read and its resident kernels built, as a
 * server that has served its tenants before has them), then 2 s for the builds to finish: the
 * rows measure a warm server, not its first search of each bank.
 */
async function warm(server: Server): Promise<void> {
  for (const bank of new Set(queries.map((q) => q.bank))) {
    const q = queries.find((x) => x.bank === bank)!;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${server.url}/v1/banks/${bank}/search`, {
        method: 'POST',
        headers: headers(bank),
        body: JSON.stringify({ query: q.text, k: 10 }),
      });
      if (res.status !== 200) throw new Error(`warm: ${res.status} ${await res.text()}`);
      await res.text();
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 2000));
}

const rows: Row[] = [];
try {
  for (const server of servers) await warm(server);
  // Each kind runs on every path in turn (alternating, so drifting load hits both alike),
  // each path from the same query.
  for (const [k, [name, connections, kind, adds]] of KINDS.entries()) {
    for (const server of servers)
      rows.push(await run(server, name, connections, kind, adds, (k * 997) % queries.length));
  }
} finally {
  for (const server of servers) await stopServer(server);
}
let p99Ratio: number | undefined;
if (options.manyTenants !== undefined) {
  const { tenantRows } = await import('./tenant-rows.js');
  const many = await tenantRows({
    seconds,
    work,
    bin: ownBin,
    serverArgs: PATHS.new!,
    memories: loaded.benchmark.memories.map((m) => ({ id: m.id, text: m.text })),
    queries: queries.map((q) => q.text),
    tenants: options.manyTenants,
    reuse: options.reuse === true,
  });
  rows.push(...many.rows);
  p99Ratio = many.p99Ratio;
}
// Peer: the same searches through `MemoryStore.search` in this process, one at a time, on the
// store the server just closed (no HTTP, no JSON, same evidence).
try {
  note(`store.search in process: ${seconds} s`);
  const store = await MemoryStore.open(stores[paths[0]!]!);
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
    path: 'store',
    rps: times.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    errors: 0,
    non2xx: 0,
    adds: '',
    cpuMs: Number.NaN,
    loopMs: Number.NaN,
    idle: Number.NaN,
    load: loadavg()[0]!,
  });
} finally {
  if (options.work === undefined) await rm(work, { recursive: true, force: true });
}
printTable(
  {
    head: [
      'run',
      'path',
      'req/s',
      'p50 ms',
      'p99 ms',
      'errors',
      'non-2xx',
      'adds',
      'CPU ms/req',
      'loop ms/req',
      'idle %',
      'load',
    ],
    align: [
      'left',
      'left',
      'right',
      'right',
      'right',
      'right',
      'right',
      'left',
      'right',
      'right',
      'right',
      'right',
    ],
    rows: rows.map((r) => [
      r.name,
      r.path,
      r.rps.toFixed(1),
      r.p50.toFixed(0),
      r.p99.toFixed(0),
      String(r.errors),
      String(r.non2xx),
      r.adds,
      Number.isNaN(r.cpuMs) ? '' : r.cpuMs.toFixed(1),
      Number.isNaN(r.loopMs) ? '' : r.loopMs.toFixed(1),
      Number.isNaN(r.idle) ? '' : r.idle.toFixed(0),
      r.load.toFixed(2),
    ]),
  },
  { markdown: options.markdown },
);
if (options.compare) {
  out();
  out('new / old, same run (req/s: higher is better; p50 and CPU per request: lower is better):');
  for (const [name] of KINDS) {
    const of = (p: string): Row => rows.find((r) => r.name === name && r.path === p)!;
    const [o, n] = [of('old'), of('new')];
    out(
      `  ${name}: req/s ×${(n.rps / o.rps).toFixed(2)}, p50 ${o.p50 > 0 ? `×${(n.p50 / o.p50).toFixed(2)}` : `${o.p50} → ${n.p50} ms`}, CPU/req ×${(n.cpuMs / o.cpuMs).toFixed(2)}, loop CPU/req ×${(n.loopMs / o.loopMs).toFixed(2)}`,
    );
  }
}
if (p99Ratio !== undefined) {
  out();
  out(`tenants' p99 beside the abuser / alone: ×${p99Ratio.toFixed(2)} (≤ ×1.20 asked)`);
}
printJson({ seconds, banks: banks.length, memories, queries: queries.length, rows, p99Ratio });
