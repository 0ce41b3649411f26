import { CommanderError, type Command } from 'commander';
import { z } from 'zod';

/**
 * The one argument idiom of the server's command lines (`bfe serve`, `bfe mcp`): commander
 * parses `argv`, zod checks the options. Returns the parsed options, or the exit code to end
 * with: 0 after `--help`, 2 after a bad argument (`<name>: message` and the usage on stderr).
 * `writeOut` receives `--help` (stdout for `serve`; stderr for `mcp`, whose stdout is the
 * protocol's).
 */
export function parseCliArgs<S extends z.ZodType>(
  program: Command,
  schema: S,
  argv: readonly string[],
  usage: { readonly name: string; readonly text: string },
  writeOut: (text: string) => void,
): { readonly args: z.output<S> } | { readonly code: 0 | 2 } {
  try {
    program.configureOutput({ writeErr: () => {}, writeOut }).parse([...argv], { from: 'user' });
    const parsed = schema.safeParse(program.opts());
    if (!parsed.success) throw new Error(z.prettifyError(parsed.error));
    return { args: parsed.data };
  } catch (error) {
    if (error instanceof CommanderError && error.exitCode === 0) return { code: 0 };
    const message = (error as Error).message.replace(/^error: /, '');
    process.stderr.write(`${usage.name}: ${message}\n${usage.text}\n`);
    return { code: 2 };
  }
}
