import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheVenv, ensureVenv, forTests, freePorts, stopChild } from './venv.js';
import { timingEdits, type MilvusTimings } from './timings.js';

/** The Milvus standalone server from PyPI: the real Go/C++ binary (knowhere, segcore, RocksMQ, embedded etcd). */
export const MILVUS_SERVER_REQUIREMENTS = ['milvus==2.3.5'] as const;
/** The user a fresh server with authorization on has (Milvus's default root password). */
export const MILVUS_ROOT_TOKEN = 'root:Milvus';

/**
 * The Milvus server virtualenv: `$BFE_MILVUS_SERVER_VENV`, else beside the model cache
 * (`~/.cache/bfe/milvus-server-2.3.5`), created once per machine.
 */
export function milvusServerVenv(env: NodeJS.ProcessEnv = process.env): string {
  return cacheVenv('milvus-server-2.3.5', env.BFE_MILVUS_SERVER_VENV, env);
}

const PROBE = ['-c', 'import milvus; milvus.MilvusServerConfig()'];

/**
 * Makes sure the Milvus server virtualenv exists (`pip install milvus==2.3.5`, a 58 MB wheel;
 * once per machine). Returns the venv's python.
 * @throws Error naming the step that failed (no Python, no network for pip)
 */
export async function ensureMilvusServer(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return ensureVenv('Milvus server', milvusServerVenv(env), MILVUS_SERVER_REQUIREMENTS, PROBE, env);
}

/** For test files: the venv's python, or `undefined` (skipped unless `BFE_REQUIRE_MILVUS=1`). */
export async function milvusServerForTests(): Promise<string | undefined> {
  return forTests('the Milvus server', () => ensureMilvusServer());
}

/** TLS of the proxy: mode 1 (server certificate) or 2 (mutual), with PEM file paths. */
export interface MilvusServerTls {
  readonly mode: 1 | 2;
  readonly serverPem: string;
  readonly serverKey: string;
  readonly caPem: string;
}

/** Options of {@link startMilvusServer}. */
export interface MilvusServerOptions {
  /** Everything the server writes: config, binaries, etcd, RocksMQ, segments, logs. */
  readonly dataDir: string;
  readonly python?: string;
  /** Authorization on (default true): every request needs a token, `root:Milvus` at first. */
  readonly auth?: boolean;
  readonly tls?: MilvusServerTls;
  /** The gRPC port (default: a free one). */
  readonly port?: number;
  /** How long to wait for `/healthz` (default 180 s: about 30–45 s on two busy cores). */
  readonly timeoutMs?: number;
  /** Shorter internal timings than Milvus's defaults (test servers: {@link TEST_TIMINGS}). */
  readonly timings?: MilvusTimings;
}

/** A running Milvus standalone server (its own process, a child of this one). */
export interface MilvusServer {
  /** `127.0.0.1:port` of the proxy (gRPC). */
  readonly address: string;
  readonly port: number;
  /** `root:Milvus` when authorization is on. */
  readonly token: string | undefined;
  /** The server process's pid while it runs. */
  readonly pid: number | undefined;
  /** Signals the server (SIGKILL: a crash) and waits for it to exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** Starts it again after `kill` or `stop`: same ports, same data. */
  restart(): Promise<void>;
  /** Stops it (SIGTERM, SIGKILL after 10 s) and waits for it to exit. */
  stop(): Promise<void>;
  /** The last lines of its output, for error messages. */
  output(): string;
}

const PORT_KEYS = [
  'proxy_port',
  'proxy_internal_port',
  'etcd_port',
  'root_coord_port',
  'query_coord_port',
  'query_node_port',
  'index_coord_port',
  'index_node_port',
  'data_coord_port',
  'data_node_port',
] as const;

// Renders configs/milvus.yaml from the wheel's template and unpacks the binaries, exactly as
// `milvus-server` does, then exits: this process runs the binary itself, so a SIGKILL hits
// Milvus and not the Python wrapper (which would leave Milvus running).
const PREPARE = String.raw`
import json, sys, milvus
a = json.loads(sys.argv[1])
c = milvus.MilvusServerConfig()
c.configs['data_dir'] = a['dataDir']
for k, v in a['items'].items():
    if k.endswith('_port'):
        c.configs[k] = v
    c.set(k, v)
c.resolve()
milvus._initialize_data_files(c.base_data_dir)
# The embedded etcd listens on 2379/2380 whatever etcd_port says, so two servers (or any etcd)
# on one machine collide: give it its own ports through an etcd config file.
client = 'http://127.0.0.1:%d' % a['items']['etcd_port']
peer = 'http://127.0.0.1:%d' % a['etcdPeerPort']
etcd = c.base_data_dir + '/configs/embed-etcd.yaml'
with open(etcd, 'w') as f:
    f.write('name: default\nlisten-client-urls: %s\nadvertise-client-urls: %s\n'
            'listen-peer-urls: %s\ninitial-advertise-peer-urls: %s\n'
            'initial-cluster: default=%s\n' % (client, client, peer, peer, peer))
conf = c.base_data_dir + '/configs/milvus.yaml'
text = open(conf).read().replace('\netcd:\n', '\netcd:\n  config:\n    path: %s\n' % etcd, 1)
# Settings asked for (timings.ts): each template line must occur exactly once.
for old, new in a['edits']:
    if text.count(old) != 1:
        sys.exit('milvus.yaml: %r not found once' % old)
    text = text.replace(old, new, 1)
open(conf, 'w').write(text)
print(json.dumps({'dir': c.base_data_dir}))
`;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL'); // never leave a server behind
});

/**
 * Starts the real Milvus standalone server (PyPI `milvus==2.3.5`) on free 127.0.0.1 ports,
 * with authorization on unless `auth: false`, and resolves once its `/healthz` answers OK.
 * @example
 * const server = await startMilvusServer({ dataDir: tmp });
 * const c = await TokenCollection.open({ address: server.address, token: server.token }, 384);
 * await server.kill('SIGKILL'); await server.restart(); // a crash and a restart
 * await server.stop();
 */
export async function startMilvusServer(options: MilvusServerOptions): Promise<MilvusServer> {
  const python = options.python ?? (await ensureMilvusServer());
  const auth = options.auth ?? true;
  for (let attempt = 0; ; attempt++) {
    const free = await freePorts(PORT_KEYS.length + 2);
    const ports: Record<string, number> = {};
    PORT_KEYS.forEach((key, i) => (ports[key] = free[i]!));
    if (options.port !== undefined) ports.proxy_port = options.port;
    const metricsPort = free[PORT_KEYS.length]!;
    const items: Record<string, number | string | boolean> = {
      ...ports,
      authorization_enabled: auth,
      etcd_log_level: 'warn',
      ...(options.tls === undefined
        ? {}
        : {
            tls_mode: options.tls.mode,
            server_pem_path: options.tls.serverPem,
            server_key_path: options.tls.serverKey,
            ca_pem_path: options.tls.caPem,
          }),
    };
    let dir: string;
    try {
      const { stdout } = await promisify(execFile)(python, [
        '-c',
        PREPARE,
        JSON.stringify({
          dataDir: options.dataDir,
          items,
          etcdPeerPort: free[PORT_KEYS.length + 1],
          edits: timingEdits(options.timings),
        }),
      ]);
      dir = (JSON.parse(stdout.trim().split('\n').pop()!) as { dir: string }).dir;
    } catch (error) {
      if (attempt >= 2)
        throw new Error(`milvus-server: preparing ${options.dataDir} failed`, { cause: error });
      continue; // a port was taken between probe and bind
    }
    const server = new Server(dir, ports.proxy_port!, metricsPort, auth, options.timeoutMs);
    try {
      await server.restart();
      return server;
    } catch (error) {
      await server.stop();
      if (attempt >= 2) throw error;
    }
  }
}

class Server implements MilvusServer {
  readonly address: string;
  readonly token: string | undefined;
  #child: ChildProcess | undefined;
  #output = '';
  /** The first lines of the current run's output (a Go panic names its cause there). */
  #head = '';

  constructor(
    readonly dir: string,
    readonly port: number,
    readonly metricsPort: number,
    auth: boolean,
    readonly timeoutMs = 180_000,
  ) {
    this.address = `127.0.0.1:${port}`;
    this.token = auth ? MILVUS_ROOT_TOKEN : undefined;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  output(): string {
    return this.#head === this.#output.slice(0, this.#head.length)
      ? this.#output
      : `${this.#head}\n…\n${this.#output}`;
  }

  async restart(): Promise<void> {
    if (this.#child !== undefined) throw new Error('milvus-server: already running');
    const bin = join(this.dir, 'bin');
    const child = spawn(join(bin, 'milvus'), ['run', 'standalone'], {
      cwd: this.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DEPLOY_MODE: 'STANDALONE',
        METRICS_PORT: String(this.metricsPort),
        MILVUS_RUN_DIR: join(this.dir, 'run'),
        LD_LIBRARY_PATH: [bin, process.env.LD_LIBRARY_PATH ?? ''].join(':'),
      },
    });
    this.#child = child;
    live.add(child);
    this.#head = '';
    const onData = (chunk: Buffer): void => {
      if (this.#head.length < 4096) this.#head += chunk.toString().slice(0, 4096);
      this.#output = (this.#output + chunk.toString()).slice(-8192); // keep draining the pipes
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', () => {
      live.delete(child);
      if (this.#child === child) this.#child = undefined;
    });
    await this.#healthy(child);
  }

  /** Polls `/healthz` on the metrics port until it says OK; fails when the process exits. */
  async #healthy(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    let exited: string | undefined;
    child.once('exit', (code, signal) => (exited = signal ?? String(code)));
    const url = `http://127.0.0.1:${this.metricsPort}/healthz`;
    for (;;) {
      if (exited !== undefined)
        throw new Error(
          `milvus-server exited (${exited}) before it was healthy: ${this.#head.slice(0, 1500)}\n…\n${this.#output.slice(-1000)}`,
        );
      if (Date.now() > deadline)
        throw new Error(
          `milvus-server was not healthy within ${this.timeoutMs} ms: ${this.#output.slice(-2000)}`,
        );
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        if (res.ok && (await res.text()).includes('OK')) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.#child;
    if (child !== undefined) await stopChild(child, signal, 10_000);
  }

  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }
}
