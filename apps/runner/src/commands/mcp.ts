import { Command } from 'commander';
import { runServerEntry } from './serve.js';

/**
 * `bfe mcp`: the memory store's MCP tools over stdio for an assistant (apps/server's
 * `mcp/bin`, run as a child with this process's stdin and stdout), forwarding SIGTERM/SIGINT
 * and exiting with its code.
 */
export function mcpCommand(): Command {
  return new Command('mcp')
    .description(
      'serve a memory store to an assistant over MCP (stdio): bfe mcp --store DIR [--bank NAME] [--read-only] [--model NAME]',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]', 'arguments of the MCP server (see apps/server/README.md)')
    .action(async (_args: string[], _opts: unknown, command: Command) => {
      await runServerEntry('mcp/bin', command.args);
    });
}
