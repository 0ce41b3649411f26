/**
 * `pnpm bench:server-framework`: a benchmark, not a test. Why apps/server runs on Fastify: the
 * throughput and latency of one small JSON echo route (`POST /echo`, a ~200-byte body parsed
 * and sent back) on three peers started in this process, loaded by autocannon (its load
 * generator in a worker thread) over 127.0.0.1:
 * - `node:http`: the bare server, `JSON.parse` and `JSON.stringify` by hand (the floor);
 * - `fastify`: Fastify 5, its default JSON parser and serializer, no schema;
 * - `fastify+zod`: Fastify with the zod type provider validating the body and serialising the
 *   response through zod schemas, as apps/server's routes do.
 * Rounds are interleaved (each peer once per round), the best round per peer is kept, and each
 * row is reported as a ratio to `node:http` measured in the same run.
 *
 * Timings on a shared machine are noisy: the load average is printed beside them.
 *
 * @example
 * pnpm bench:server-framework --seconds 5 --connections 8 --rounds 2
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import {
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { z } from 'zod';
import { benchCommand, flag, parseCommand, positive } from '../shared/cli.js';
import { note, printJson, printTable } from '../shared/table.js';

const command = benchCommand(
  'bench:server-framework',
  'one JSON echo route on node:http, Fastify and Fastify with zod, loaded by autocannon',
)
  .addOption(flag('--seconds <s>', 'per measurement', positive, '5'))
  .addOption(flag('--connections <n>', 'autocannon connections', positive, '8'))
  .addOption(flag('--rounds <n>', 'interleaved rounds (the best per peer is kept)', positive, '2'))
  .option('--markdown', 'print the table as Markdown');
const { options } = parseCommand<{
  seconds: number;
  connections: number;
  rounds: number;
  markdown?: boolean;
}>(command);
const { seconds, connections, rounds } = options;

const payload = JSON.stringify({
  query: 'What is the name of the cat Alice adopted in May?',
  k: 10,
  system: 'sparse-fusion',
  explain: true,
  meta: { tenant: 'alice', trace: 'a1b2c3d4e5f6', tags: ['pets', 'family', 'spring'] },
});

const echoSchema = z.strictObject({
  query: z.string().min(1),
  k: z.number().int().min(1),
  system: z.string(),
  explain: z.boolean(),
  meta: z.record(z.string(), z.unknown()),
});

interface Peer {
  readonly name: string;
  start(): Promise<{ port: number; close(): Promise<void> }>;
}

const nodeHttp: Peer = {
  name: 'node:http',
  async start() {
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let bodyOut: string;
        try {
          bodyOut = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          res.writeHead(400).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(bodyOut);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      port: (server.address() as AddressInfo).port,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  },
};

function fastifyPeer(zod: boolean): Peer {
  return {
    name: zod ? 'fastify+zod' : 'fastify',
    async start() {
      const app = Fastify({ logger: false });
      if (zod) {
        app.setValidatorCompiler(validatorCompiler);
        app.setSerializerCompiler(serializerCompiler);
        app
          .withTypeProvider<ZodTypeProvider>()
          .post(
            '/echo',
            { schema: { body: echoSchema, response: { 200: echoSchema } } },
            async (request) => request.body,
          );
      } else app.post('/echo', async (request) => request.body);
      await app.listen({ host: '127.0.0.1', port: 0 });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  };
}

interface Row {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
  readonly load: number;
}

async function measure(peer: Peer): Promise<Row> {
  const server = await peer.start();
  try {
    const result = await autocannon({
      url: `http://127.0.0.1:${server.port}/echo`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: payload,
      connections,
      duration: seconds,
      workers: 1,
    });
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts,
      non2xx: result.non2xx,
      load: loadavg()[0]!,
    };
  } finally {
    await server.close();
  }
}

const peers = [nodeHttp, fastifyPeer(false), fastifyPeer(true)];
const best = new Map<string, Row>();
for (let round = 1; round <= rounds; round++) {
  for (const peer of peers) {
    note(`round ${round}/${rounds}: ${peer.name} (${seconds} s, ${connections} connections)`);
    const row = await measure(peer);
    const prev = best.get(peer.name);
    if (prev === undefined || row.rps > prev.rps) best.set(peer.name, row);
  }
}
const floor = best.get('node:http')!;
printTable(
  {
    head: ['peer', 'req/s', '× node:http', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'load'],
    rows: peers.map((p) => {
      const r = best.get(p.name)!;
      return [
        p.name,
        r.rps.toFixed(0),
        (r.rps / floor.rps).toFixed(2),
        r.p50.toFixed(1),
        r.p99.toFixed(1),
        String(r.errors),
        String(r.non2xx),
        r.load.toFixed(2),
      ];
    }),
  },
  { markdown: options.markdown },
);
printJson({ seconds, connections, rounds, results: Object.fromEntries(best) });
