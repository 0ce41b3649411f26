import { spawn } from 'node:child_process';

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last lines of the child's stdout and stderr, joined by ' | ' (or why it did not start). */
  readonly tail: string;
}

/**
 * Runs one measurement process to its end (killed after `timeoutSeconds`) and keeps the end of
 * its output, so that a failed peer can be reported with its own words.
 */
export function runChild(
  command: string,
  args: readonly string[],
  options: {
    readonly env: NodeJS.ProcessEnv;
    readonly cwd?: string;
    readonly timeoutSeconds: number;
  },
  tailLines = 6,
): Promise<ChildExit> {
  return new Promise((done) => {
    let tail = '';
    const keep = (b: Buffer): void => {
      tail = (tail + b.toString()).slice(-4000);
    };
    const child = spawn(command, args, {
      env: options.env,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutSeconds * 1000);
    child.on('error', (error) => {
      clearTimeout(timer);
      done({ code: null, signal: null, tail: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, tail: tail.trim().split('\n').slice(-tailLines).join(' | ') });
    });
  });
}
