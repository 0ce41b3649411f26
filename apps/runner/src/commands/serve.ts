import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';

/**
 * An entry point of apps/server in this workspace (`bin`: `bfe serve`; `mcp/bin`: `bfe mcp`). Apps never import each other, so `bfe serve`
 * runs apps/server's own bin as a child process: its TypeScript source when the runner runs
 * from source (through tsx, with the workspace's source condition), its build otherwise (or,
 * where the runner itself runs as transpiled sources, the server's beside it).
 */
export function serverEntry(entry = 'bin'): { script: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const at = (path: string): string =>
    fileURLToPath(new URL(`../../../server/${path}`, import.meta.url));
  // Built: the server's build, or (a tree of transpiled sources, as tests run) its `src` beside.
  const script = fromSource
    ? at(`src/${entry}.ts`)
    : ([at(`dist/${entry}.js`), at(`src/${entry}.js`)].find((p) => existsSync(p)) ??
      at(`dist/${entry}.js`));
  if (!existsSync(script)) throw new Error(`bfe: the server's entry point ${script} is missing`);
  const execArgv = fromSource
    ? ['--conditions=@bfe/source', '--import', import.meta.resolve('tsx')]
    : [];
  return { script, execArgv };
}

/**
 * `bfe serve`: starts apps/server (`--store DIR --host --port --keys --model`), forwarding the
 * arguments, stdio and SIGTERM/SIGINT, and exits with the server's exit code.
 */
export function serveCommand(): Command {
  return new Command('serve')
    .description(
      'serve a memory store over HTTP: bfe serve --store DIR [--host 127.0.0.1] [--port 8080] [--keys FILE] [--model NAME]',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]', 'arguments of the server (see apps/server/README.md)')
    .action(async (_args: string[], _opts: unknown, command: Command) => {
      await runServerEntry('bin', command.args);
    });
}

/**
 * Runs an entry point of apps/server as a child process with this process's stdio (so an MCP
 * client's stdin and stdout reach `bfe mcp` directly), forwarding SIGTERM/SIGINT, and exits
 * with the child's code.
 */
export async function runServerEntry(entry: string, args: readonly string[]): Promise<never> {
  const { script, execArgv } = serverEntry(entry);
  const child = spawn(process.execPath, [...execArgv, script, ...args], { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  process.on('SIGTERM', forward);
  process.on('SIGINT', forward);
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128)));
  });
  process.off('SIGTERM', forward);
  process.off('SIGINT', forward);
  // The server's own code (0 after a graceful stop, 2 for bad arguments), not the runner's.
  process.exit(code);
}
