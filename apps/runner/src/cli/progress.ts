/**
 * A progress printer for long stages: one self-updating line with rate and ETA on a TTY, and
 * plain lines at every 10 % when stderr is not a TTY or `CI` is set. Progress goes to stderr,
 * so `--json` output on stdout stays clean.
 */
export function progressPrinter(
  quiet: boolean,
): (label: string, done: number, total: number, extra?: string) => void {
  if (quiet) return () => {};
  const tty = process.stderr.isTTY === true && process.env.CI === undefined;
  const started = new Map<string, number>();
  const lastDecile = new Map<string, number>();
  return (label, done, total, extra = '') => {
    const t0 = started.get(label) ?? performance.now();
    started.set(label, t0);
    const elapsed = (performance.now() - t0) / 1000;
    const eta = done > 0 ? (elapsed / done) * (total - done) : Number.NaN;
    const pct = total === 0 ? 100 : (100 * done) / total;
    const line = `${label}: ${done}/${total} (${pct.toFixed(0)}%) ${extra} ${elapsed.toFixed(0)} s elapsed${Number.isFinite(eta) && done < total ? `, ETA ${eta.toFixed(0)} s` : ''}`;
    if (tty) {
      const width = 24;
      const filled = Math.round((width * done) / Math.max(total, 1));
      process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${line}\x1b[K`);
      if (done >= total) process.stderr.write('\n');
      return;
    }
    const decile = Math.floor(pct / 10);
    if (decile > (lastDecile.get(label) ?? -1) || done >= total) {
      lastDecile.set(label, decile);
      process.stderr.write(`${line}\n`);
    }
  };
}
