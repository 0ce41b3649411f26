/**
 * Processes and disk of the `scale` part of `pnpm bench:store`: its child processes (with a
 * resident-memory guard, so a store that does not fit cannot take the machine down), free disk
 * and the bytes of a store directory by kind of file.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, stat, statfs } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { repoRoot } from '../shared/paths.js';
import type { OpenReport } from './scale-child.js';

const CHILD = fileURLToPath(new URL('./scale-child.ts', import.meta.url));

/** How a child process ended, what it printed, and its resident memory. */
export interface ScaleChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly lines: string[];
  readonly tail: string;
  /** The largest resident set size seen (`/proc/<pid>/status` VmHWM), MiB. */
  readonly hwmMb: number;
  /** Set when the guard killed it for resident memory over the limit. */
  readonly overLimit: boolean;
}

function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return m === null ? 0 : Number(m[1]) / 1024;
  } catch {
    return 0;
  }
}

/**
 * Runs scale-child.ts with `task` (its JSON argument). `onLine` sees each stdout line and may
 * return `'kill'` to SIGKILL the child. A child whose resident memory passes `rssLimitMb` is
 * killed (`overLimit`).
 */
export function runScaleChild(
  task: object,
  rssLimitMb: number,
  onLine: (line: string) => 'kill' | undefined = () => undefined,
): Promise<ScaleChildExit> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@bfe/source', '--import', 'tsx', CHILD, JSON.stringify(task)],
      { cwd: repoRoot, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const lines: string[] = [];
    let tail = '';
    let partial = '';
    let hwmMb = 0;
    let overLimit = false;
    child.stdout.on('data', (b: Buffer) => {
      const parts = (partial + b.toString()).split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (onLine(line) === 'kill') child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (b: Buffer) => (tail = (tail + b.toString()).slice(-4000)));
    const guard = setInterval(() => {
      const pid = child.pid;
      if (pid === undefined) return;
      hwmMb = Math.max(hwmMb, statusMb(pid, 'VmHWM'));
      if (statusMb(pid, 'VmRSS') > rssLimitMb) {
        overLimit = true;
        child.kill('SIGKILL');
      }
    }, 100);
    child.on('error', (error) => {
      clearInterval(guard);
      fail(error);
    });
    child.on('close', (code, signal) => {
      clearInterval(guard);
      if (partial !== '') lines.push(partial);
      done({
        code,
        signal,
        lines,
        tail: tail.trim().split('\n').slice(-6).join(' | '),
        hwmMb,
        overLimit,
      });
    });
  });
}

/** Bytes free to this user on the file system holding `dir`. */
export async function freeBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

/** A store directory's bytes: segments, WAL, manifest, graphs and the rest. */
export async function storeBytes(dir: string) {
  const b = { segments: 0, wal: 0, manifest: 0, graphs: 0, other: 0 };
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    const { size } = await stat(path);
    if (e.name.endsWith('.arrow') && e.parentPath.endsWith('segments')) b.segments += size;
    else if (/^wal-\d+\.log$/.test(e.name)) b.wal += size;
    else if (e.name === 'MANIFEST.json') b.manifest += size;
    else if (e.parentPath.endsWith('graphs')) b.graphs += size;
    else b.other += size;
  }
  return b;
}

/** The `open` child's report, or why there is none. */
export function childReport(exit: ScaleChildExit, what: string, limitGb: number): OpenReport {
  const line = exit.lines.find((l) => l.startsWith('{'));
  if (exit.overLimit)
    throw new Error(`${what}: the child passed --rss-limit-gb ${limitGb} and was killed`);
  if (line === undefined)
    throw new Error(`${what}: the child ended (${exit.code ?? exit.signal}): ${exit.tail}`);
  return JSON.parse(line) as OpenReport;
}
