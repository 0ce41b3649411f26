/**
 * Whether process `pid` runs on this host: signal 0 (EPERM means it runs, as another user).
 * The one liveness check behind stale locks, leases and temporary folders of dead processes.
 * @example
 * isProcessAlive(process.pid); // true
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
