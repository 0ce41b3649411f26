/**
 * `bench:server-load --many-tenants`: the many-tenant rows and the rate-limit row, on a server
 * of their own. 1,000 tenants (API keys), each with its own bank; the LoCoMo turns dealt over
 * them round-robin (≈ 6 memories a bank); searches (LoCoMo question texts, no label read) sent
 * each by a different tenant to its bank, with 1 and 8 connections. Then the rate-limit pair:
 * the tenants at a fixed rate (half the searches/s they reached with 8 connections: the server
 * busy but not saturated, on any machine) over 8 connections, alone and while one more key —
 * limited by the keys file to 2 requests/s (burst 4, 2 in flight) — sends as fast as 16
 * connections allow; the tenants' p99 with the abuser over their p99 alone is the figure.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { MANIFEST_FILE } from '@bfe/store';
import { note } from '../shared/table.js';
import { cpuMark, rowOf, startServer, stopServer, type Row } from './load-server.js';

/** What the rows need from the main script. */
export interface TenantRowsInput {
  readonly seconds: number;
  readonly work: string;
  readonly bin: string;
  readonly serverArgs: readonly string[];
  readonly memories: readonly { readonly id: string; readonly text: string }[];
  readonly queries: readonly string[];
  readonly tenants: number;
  /** Skip the fill when `<work>/store-many` holds a store (`--work … --reuse`). */
  readonly reuse: boolean;
}

/** The abusive key's limits in the keys file. */
const ABUSER = { rate: 2, burst: 4, concurrency: 2 } as const;
/** The tenants' fixed rate in the rate-limit pair: this share of their measured throughput. */
const TENANT_LOAD = 0.5;

/** The rows, and the tenants' p99 ratio with the abuser over without. */
export async function tenantRows(
  input: TenantRowsInput,
): Promise<{ rows: Row[]; p99Ratio: number }> {
  const { seconds, work, tenants, queries } = input;
  const keyOf = (t: number): string => `many-${t}-key-${'y'.repeat(16)}`;
  const abuserKey = `abuser-key-${'z'.repeat(16)}`;
  const keysFile = join(work, 'keys-many.json');
  const keys: Record<string, unknown> = {};
  for (let t = 0; t < tenants; t++) keys[keyOf(t)] = { banks: [`m${t}`], write: true };
  keys[abuserKey] = { banks: ['abuse'], write: true, ...ABUSER };
  await writeFile(keysFile, JSON.stringify(keys));
  const store = join(work, 'store-many');
  const reused = input.reuse && existsSync(join(store, MANIFEST_FILE));
  const server = await startServer('new', input.bin, store, keysFile, [...input.serverArgs]);
  const headers = (key: string): Record<string, string> => ({
    'content-type': 'application/json',
    authorization: `Bearer ${key}`,
  });
  const post = async (path: string, key: string, body: unknown): Promise<void> => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`fill ${path}: ${res.status} ${await res.text()}`);
    await res.text();
  };
  const rows: Row[] = [];
  let p99Ratio: number;
  try {
    const t0 = performance.now();
    for (let t = 0; t < (reused ? 0 : tenants); t++) {
      const mine = input.memories.filter((_, i) => i % tenants === t);
      for (let i = 0; i < mine.length; i += 64) {
        const memories = mine.slice(i, i + 64);
        await post(`/v1/banks/m${t}/memories`, keyOf(t), { memories });
      }
    }
    if (!reused) {
      await post('/v1/banks/abuse/memories', abuserKey, { memories: input.memories.slice(0, 8) });
    }
    const took = ((performance.now() - t0) / 1000).toFixed(1);
    note(
      reused
        ? `reused the filled store in ${store}`
        : `filled ${tenants} banks, ${input.memories.length} memories in ${took} s`,
    );

    let next = 0;
    const search = (req: autocannon.Request): autocannon.Request => {
      const i = next++;
      // Consecutive requests go to far-apart tenants (7919 is prime to 1,000).
      const t = (i * 7919) % tenants;
      return {
        ...req,
        method: 'POST',
        path: `/v1/banks/m${t}/search`,
        headers: headers(keyOf(t)),
        body: JSON.stringify({ query: queries[i % queries.length]!, k: 10 }),
      };
    };
    const tenantRun = (connections: number, rate?: number) =>
      autocannon({
        url: server.url,
        connections,
        duration: seconds,
        ...(rate === undefined ? {} : { overallRate: rate }),
        requests: [{ setupRequest: search }],
      });
    const label = `${tenants.toLocaleString('en')} tenants`;
    let capacity = 0;
    for (const connections of [1, 8]) {
      note(`${label}: search, ${connections} connection(s): ${seconds} s`);
      const mark = cpuMark(server);
      const result = await tenantRun(connections);
      const name = `search, ${connections} connection${connections > 1 ? 's' : ''}, ${label}`;
      rows.push(rowOf(name, server, result, mark));
      capacity = result.requests.average;
    }
    const tenantRate = Math.max(1, Math.round(TENANT_LOAD * capacity));

    note(`rate limit: tenants at ${tenantRate}/s alone: ${seconds} s`);
    let mark = cpuMark(server);
    const alone = await tenantRun(8, tenantRate);
    rows.push(rowOf(`tenants at ${tenantRate}/s, 8 connections, alone`, server, alone, mark));
    note(`rate limit: tenants at ${tenantRate}/s beside one key over its rate: ${seconds} s`);
    mark = cpuMark(server);
    const abuse = autocannon({
      url: server.url,
      connections: 16,
      duration: seconds,
      requests: [
        {
          method: 'POST',
          path: '/v1/banks/abuse/search',
          headers: headers(abuserKey),
          body: JSON.stringify({ query: queries[0]!, k: 10 }),
        },
      ],
    });
    const [beside, abuser] = await Promise.all([tenantRun(8, tenantRate), abuse]);
    const requests = beside.requests.total + abuser.requests.total;
    rows.push(
      rowOf(
        `tenants at ${tenantRate}/s, 8 connections, beside the abuser`,
        server,
        beside,
        mark,
        requests,
      ),
    );
    rows.push({
      ...rowOf(
        `the abuser: one key (${ABUSER.rate}/s, burst ${ABUSER.burst}), 16 connections`,
        server,
        abuser,
        mark,
        requests,
      ),
      adds: `${abuser.non2xx} answered 429 or other non-2xx`,
    });
    p99Ratio = beside.latency.p99 / alone.latency.p99;
  } finally {
    await stopServer(server);
  }
  return { rows, p99Ratio };
}
