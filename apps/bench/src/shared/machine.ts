/**
 * What a measurement reads about its process and the machine: resident memory, CPU time, and
 * the busy time of the whole machine, which tells how much other processes disturbed a timing.
 */
import { readFileSync } from 'node:fs';

/** Current resident set size, MiB. */
export function rssMb(): number {
  return process.memoryUsage.rss() / 2 ** 20;
}

/** This process's peak resident set size so far, MiB (`getrusage` `maxRSS` is in KiB). */
export function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** CPU milliseconds this process (all its threads) has used since `from` (`process.cpuUsage()`). */
export function cpuMsSince(from: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(from);
  return (c.user + c.system) / 1000;
}

/** CPU seconds this process (all its threads) has used. */
export function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * The CPU's model and widest x86 SIMD (Linux `/proc/cpuinfo`; e.g. `AMD EPYC, AVX-512`), or
 * `unknown`: a native peer's speed depends on it, WebAssembly's 128-bit SIMD does not.
 */
export function cpuSimd(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const model = /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? 'unknown CPU';
    const flags = ` ${/^flags\s*:\s*(.+)$/m.exec(info)?.[1] ?? ''} `;
    const simd = flags.includes(' avx512f ')
      ? 'AVX-512'
      : flags.includes(' avx2 ')
        ? 'AVX2'
        : 'no AVX2';
    return `${model}, ${simd}`;
  } catch {
    return 'unknown';
  }
}

/** Busy CPU seconds of the whole machine so far (Linux `/proc/stat`), or `null` elsewhere. */
export function machineBusySeconds(): number | null {
  try {
    const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
    // cpu user nice system idle iowait irq softirq steal …, in USER_HZ (100 per second on Linux).
    const [user, nice, system, , , irq, softirq, steal] = first.slice(1, 9).map(Number);
    return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
  } catch {
    return null;
  }
}

/** Starts a measurement of wall time, own CPU time and other processes' CPU time. */
export function startClock(): () => {
  seconds: number;
  cpuSeconds: number;
  otherCpuSeconds: number | null;
} {
  const wall = performance.now();
  const cpu = ownCpuSeconds();
  const busy = machineBusySeconds();
  return () => {
    const seconds = (performance.now() - wall) / 1000;
    const cpuSeconds = ownCpuSeconds() - cpu;
    const busyNow = machineBusySeconds();
    const otherCpuSeconds =
      busy === null || busyNow === null ? null : Math.max(0, busyNow - busy - cpuSeconds);
    return { seconds, cpuSeconds, otherCpuSeconds };
  };
}

export interface IdleWait {
  /** Length of each look at the machine. */
  readonly windowSeconds: number;
  /** Busy cores (other processes) below which the machine counts as idle. */
  readonly idleCores: number;
  readonly log: (line: string) => unknown;
}

/**
 * Waits (up to `maxSeconds`; 0: not at all) until other processes keep fewer than
 * `idleCores` cores busy over a window: on a shared 2-core machine one busy neighbour doubles
 * a timing. Returns at once where `/proc/stat` is missing. A machine that stays busy is
 * measured anyway; each timing reports the contention it saw.
 */
export async function waitForIdle(maxSeconds: number, wait: IdleWait): Promise<void> {
  if (maxSeconds <= 0) return;
  const deadline = performance.now() + maxSeconds * 1000;
  let cores = 0;
  let said = false;
  while (performance.now() < deadline) {
    const before = machineBusySeconds();
    await new Promise((done) => setTimeout(done, wait.windowSeconds * 1000));
    const after = machineBusySeconds();
    if (before === null || after === null) return;
    cores = (after - before) / wait.windowSeconds;
    if (cores < wait.idleCores) return;
    if (!said)
      wait.log(`waiting for a quiet machine (others keep ${cores.toFixed(2)} cores busy) …`);
    said = true;
  }
  wait.log(
    `still busy after ${maxSeconds} s (others keep ${cores.toFixed(2)} cores busy): measuring anyway`,
  );
}
