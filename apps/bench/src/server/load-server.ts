/**
 * `bench:server-load`'s server process and its rows: `bfe serve` (apps/server's own bin) as a
 * child process, its CPU time from /proc, and the table row every run reports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import type autocannon from 'autocannon';
import { note } from '../shared/table.js';

/** A running `bfe serve`. */
export interface Server {
  readonly path: string;
  readonly url: string;
  readonly child: ChildProcess;
}

/** Starts apps/server's bin (`bin`) on `store` with `keysFile` and `args`, on a free port. */
export async function startServer(
  path: string,
  bin: string,
  store: string,
  keysFile: string,
  args: readonly string[],
): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@bfe/source',
      '--import',
      import.meta.resolve('tsx'),
      bin,
      ...['--store', store, '--port', '0', '--keys', keysFile, ...args],
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (l) =>
      resolve(l.replace('listening on ', '')),
    );
    child.once('exit', (code) => reject(new Error(`bfe serve exited ${code}`)));
  });
  note(`bfe serve (${path}: ${bin} ${args.join(' ') || 'defaults'}) at ${url}`);
  return { path, url, child };
}

/** SIGTERM, and waits for the exit. */
export async function stopServer(server: Server): Promise<void> {
  server.child.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => server.child.once('exit', r));
  note(`bfe serve (${server.path}) exited ${code}`);
}

/**
 * CPU seconds (user + system) the process has used, every thread (or its main thread, the event
 * loop, with `mainThread`); NaN where /proc is absent.
 */
export function cpuSeconds(pid: number | undefined, mainThread = false): number {
  try {
    const stat = readFileSync(
      mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`,
      'utf8',
    );
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** The machine's idle and total CPU time since boot (/proc/stat's first line, in ticks). */
function machineTicks(): { idle: number; total: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
    const ticks = f.map(Number);
    // idle + iowait; guest times are already inside user and nice.
    return { idle: ticks[3]! + ticks[4]!, total: ticks.slice(0, 8).reduce((a, b) => a + b, 0) };
  } catch {
    return { idle: Number.NaN, total: Number.NaN };
  }
}

/** One row of the load table. */
export interface Row {
  readonly name: string;
  readonly path: string;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
  readonly adds: string;
  /** Server CPU milliseconds (every thread) per request, adds included. */
  readonly cpuMs: number;
  /** The same, of the server's main thread (its event loop) alone. */
  readonly loopMs: number;
  /**
   * Per cent of the machine's CPU time left idle during the run (every core, every process): a
   * server that cannot use the cores it has shows it here, one held back by CPU does not.
   */
  readonly idle: number;
  readonly load: number;
}

/** The server's CPU counters now, to difference after a run. */
export function cpuMark(server: Server): CpuMark {
  return {
    all: cpuSeconds(server.child.pid),
    loop: cpuSeconds(server.child.pid, true),
    machine: machineTicks(),
  };
}

/** What {@link cpuMark} reads. */
export interface CpuMark {
  readonly all: number;
  readonly loop: number;
  readonly machine: { readonly idle: number; readonly total: number };
}

/** A row from an autocannon result, the server's CPU since `mark` spread over `requests`. */
export function rowOf(
  name: string,
  server: Server,
  result: autocannon.Result,
  mark: CpuMark,
  requests = result.requests.total,
  adds = '',
): Row {
  const now = cpuMark(server);
  return {
    name,
    path: server.path,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    adds,
    cpuMs: (1000 * (now.all - mark.all)) / Math.max(1, requests),
    loopMs: (1000 * (now.loop - mark.loop)) / Math.max(1, requests),
    idle: (100 * (now.machine.idle - mark.machine.idle)) / (now.machine.total - mark.machine.total),
    load: loadavg()[0]!,
  };
}
