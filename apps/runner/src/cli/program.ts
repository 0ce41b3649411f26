import { Command, CommanderError } from 'commander';
import { cacheCommand } from '../commands/cache.js';
import { calibrateCommand } from '../commands/calibrate.js';
import { dataFetchCommand } from '../commands/data-fetch.js';
import { dataInspectCommand } from '../commands/data-inspect.js';
import { dataListCommand } from '../commands/data-list.js';
import { dataSplitCommand } from '../commands/data-split.js';
import { encodeCommand } from '../commands/encode.js';
import { evalCommand } from '../commands/eval.js';
import { explainCommand } from '../commands/explain.js';
import { mcpCommand } from '../commands/mcp.js';
import { modelFetchCommand } from '../commands/model-fetch.js';
import { runCommand } from '../commands/run.js';
import { scoreCommand } from '../commands/score.js';
import { serveCommand } from '../commands/serve.js';
import { storeCommand } from '../commands/store.js';
import { debugRequested, handleError } from './errors.js';

/** Builds the `bfe` program. Each subcommand imports its heavy modules lazily in its action. */
export function buildProgram(): Command {
  const program = new Command('bfe')
    .description('Token-level evidence retrieval for memory banks (Beyond the Final Embedding)')
    .option('--debug', 'print stack traces of errors (also BFE_DEBUG=1)')
    .showHelpAfterError()
    .exitOverride();
  const data = program.command('data').description('benchmark datasets: fetch, inspect, split');
  data.addCommand(dataListCommand());
  data.addCommand(dataFetchCommand());
  data.addCommand(dataInspectCommand());
  data.addCommand(dataSplitCommand());
  program.addCommand(encodeCommand());
  program.addCommand(runCommand());
  program.addCommand(scoreCommand());
  program.addCommand(evalCommand());
  program.addCommand(explainCommand());
  program.addCommand(calibrateCommand());
  program.command('model').description('sentence encoders: fetch').addCommand(modelFetchCommand());
  program.addCommand(cacheCommand());
  program.addCommand(serveCommand());
  program.addCommand(storeCommand());
  program.addCommand(mcpCommand());
  return program;
}

/** Runs the CLI and returns the process exit code (0 ok, 1 internal error, 2 user error). */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    const program = buildProgram();
    const unknown = unknownCommand(program, argv.slice(2));
    if (unknown !== undefined) {
      process.stderr.write(`bfe: unknown command '${unknown}'\n`);
      program.outputHelp({ error: true });
      return 2;
    }
    await program.parseAsync([...argv]);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    return handleError(error, { debug: debugRequested(argv, process.env) });
  }
}

/**
 * The first argument when it names no subcommand (commander would print the top-level help and
 * exit 0 for `bfe nosuch --help`): an unknown subcommand is an error whatever follows it.
 */
function unknownCommand(program: Command, args: readonly string[]): string | undefined {
  const first = args.find((a) => !a.startsWith('-'));
  if (first === undefined) return undefined;
  const known = new Set(program.commands.flatMap((c) => [c.name(), ...c.aliases()]));
  known.add('help');
  return known.has(first) ? undefined : first;
}
