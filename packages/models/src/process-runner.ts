import { spawn } from 'node:child_process';
import { FetchError } from '@bfe/core';
import { errorText, type FetchContext } from './fetch-context.js';

// Subprocesses of a fetch (venv creation, pip, the export script): output reported line by
// line as progress, the last lines kept for the error when one fails.

/**
 * Runs `command` through the context's runner; a failure to start or a non-zero exit is a
 * FetchError that names `what` and quotes the last 20 lines of output. (Package-internal.)
 */
export async function runChecked(
  ctx: FetchContext,
  command: string,
  args: readonly string[],
  what: string,
): Promise<void> {
  const tail: string[] = [];
  const env = { ...ctx.env, PYTHONUNBUFFERED: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  let result: { code: number | null };
  try {
    result = await ctx.run(command, args, {
      env,
      onLine: (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        ctx.progress({ kind: 'output', line });
      },
    });
  } catch (cause) {
    throw new FetchError(`${what} could not start: ${errorText(cause)}`, {
      cause,
      suggestion: 'Python 3.11 with venv is needed for the export (set BFE_PYTHON to use another).',
    });
  }
  if (result.code !== 0) {
    throw new FetchError(
      `${what} failed (exit ${String(result.code)}):\n${tail.map((l) => `  ${l}`).join('\n')}`,
    );
  }
}

/** Spawns a process, merging stdout and stderr into lines: the default ProcessRunner. (Package-internal.) */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { readonly env: NodeJS.ProcessEnv; readonly onLine: (line: string) => void },
): Promise<{ code: number | null }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, [...args], {
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const split = (): ((chunk: Buffer) => void) => {
      let rest = '';
      return (chunk) => {
        const lines = (rest + chunk.toString('utf8')).split(/\r?\n|\r/);
        rest = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') options.onLine(line);
      };
    };
    child.stdout.on('data', split());
    child.stderr.on('data', split());
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code }));
  });
}
