// Test helpers for a real server on 127.0.0.1 (imported by *.test.ts only; excluded from the build).
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { tmpDir } from '@bfe/core/testing';
import type { Embedder } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { serve, type RunningServer, type ServeOptions } from '../serve.js';

/**
 * `serve()` over the fake embedder on 127.0.0.1, a free port, resident kernels on the event
 * loop; `keys` written to a file first; in `dir` (default: a temporary directory of the test).
 */
export async function liveServer(
  options: Partial<Omit<ServeOptions, 'keys'>> & {
    keys?: Record<string, unknown>;
    dir?: string;
  } = {},
): Promise<RunningServer & { port: number }> {
  const { keys: keyMap, dir: given, ...rest } = options;
  const dir = given ?? tmpDir();
  let keys: string | undefined;
  if (keyMap !== undefined) {
    keys = join(dir, 'keys.json');
    writeFileSync(keys, JSON.stringify(keyMap));
  }
  const server = await serve({
    store: join(dir, 'store'),
    host: '127.0.0.1',
    port: 0,
    storeOptions: { embedder: fakeEmbedder() },
    kernelWorkers: 0,
    ...rest,
    ...(keys === undefined ? {} : { keys }),
  });
  return Object.assign(server, { port: Number(new URL(server.url).port) });
}

/** An answer read whole. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The body as JSON (throws when it is not). */
  json(): any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * One HTTP request through `node:http`, which (unlike `fetch`) sends any `Host` and `Origin`
 * and any path bytes as given.
 */
export function send(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            text,
            json: () => JSON.parse(text),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A JSON POST through {@link send}. */
export function post(
  port: number,
  path: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return send(port, path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(payload),
  });
}

/** Raw bytes on a new connection; resolves with all the server wrote once it closed it. */
export function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
  });
}

/** The `{ error: { code, message } }` body of an HTTP/1.1 answer read raw. */
export function rawError(answer: string): { status: number; code: string; message: string } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
    error: { code: string; message: string };
  };
  return { status, ...body.error };
}

/**
 * The fake embedder, with the encoding of `role` texts held until `release()`: a search (or an
 * add) stays in flight; `started` resolves once one is held.
 */
export function gatedEmbedder(
  role: 'query' | 'passage',
): Embedder & { started: Promise<void>; release(): void } {
  const inner = fakeEmbedder();
  let started!: () => void;
  let release!: () => void;
  const startedP = new Promise<void>((r) => (started = r));
  const gate = new Promise<void>((r) => (release = r));
  return {
    model: inner.model,
    dim: inner.dim,
    tokenText: (id) => inner.tokenText(id),
    dispose: () => inner.dispose(),
    async encode(texts, r, options = {}) {
      if (r === role) {
        started();
        await gate;
      }
      return inner.encode(texts, r, options);
    },
    started: startedP,
    release,
  };
}
