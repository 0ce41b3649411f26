/**
 * The one argument parser of the benchmark scripts: commander, as `bfe` itself. A script builds
 * its command with {@link benchCommand}, declares numeric and list flags with {@link flag} (the
 * default is written as on the command line and parsed like a given value, so `--help` shows it
 * as typed) and reads typed options with {@link parseCommand}. `--help` lists every flag; an
 * unknown flag, a missing value or a bad number prints the error and the help, exit 1.
 *
 * @example
 * const command = benchCommand('bench:scorer', 'exact top-k against numpy and faiss')
 *   .addOption(flag('--sizes <list>', 'bank tokens', intList, '10000,100000'))
 *   .option('--json', 'print only the JSON line');
 * const { options } = parseCommand<{ sizes: number[]; json?: boolean }>(command);
 * // options.sizes: [10000, 100000]
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { note } from './table.js';

/** For a flag that {@link flag} does not cover (hidden, or its default from the environment). */
export { Option };

/** A flag's text in, its value out; throws {@link InvalidArgumentError} on a bad value. */
export type Parse<T> = (text: string) => T;

/** A script's command: `name` as its `pnpm` script is called, help after every error. */
export function benchCommand(name: string, description: string): Command {
  return new Command(name).description(description).showHelpAfterError();
}

/**
 * An option whose value goes through `parse`; `defaultText`, when given, is parsed the same way
 * and shown as written in `--help`.
 */
export function flag<T>(
  flags: string,
  description: string,
  parse: Parse<T>,
  defaultText?: string,
): Option {
  const option = new Option(flags, description).argParser((text: string) => parse(text));
  return defaultText === undefined ? option : option.default(parse(defaultText), defaultText);
}

/** Parses `args` (default: this process's arguments) into the command's options and positionals. */
export function parseCommand<T>(
  command: Command,
  args: readonly string[] = process.argv.slice(2),
): { options: T; args: string[] } {
  command.parse([...args], { from: 'user' });
  return { options: command.opts() as T, args: command.args };
}

/** A whole number ≥ 1. */
export const positive: Parse<number> = (text) => integer(text, 1);

/** A whole number ≥ 0. */
export const nonNegative: Parse<number> = (text) => integer(text, 0);

/** A finite number ≥ 0 (seconds, noise, jitter). */
export const nonNegativeNumber: Parse<number> = (text) => {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('expected a number ≥ 0.');
  return n;
};

/** Comma-separated whole numbers ≥ 1, e.g. `10000,100000`; `''` is the empty list. */
export const intList: Parse<number[]> = (text) => list(text).map(positive);

/** Comma-separated numbers ≥ 0, e.g. `0.5,1`; `''` is the empty list. */
export const numberList: Parse<number[]> = (text) => list(text).map(nonNegativeNumber);

/** Comma-separated words, trimmed, empty items dropped. */
export const list: Parse<string[]> = (text) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** One of `choices`, e.g. `--shape small|locomo`. */
export function oneOf<const C extends string>(choices: readonly C[]): Parse<C> {
  return (text) => {
    if (!(choices as readonly string[]).includes(text))
      throw new InvalidArgumentError(`expected one of ${choices.join(', ')}.`);
    return text as C;
  };
}

/** Comma-separated items of `choices`. */
export function someOf<const C extends string>(choices: readonly C[]): Parse<C[]> {
  const one = oneOf(choices);
  return (text) => list(text).map(one);
}

function integer(text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < min)
    throw new InvalidArgumentError(`expected a whole number ≥ ${min}.`);
  return n;
}

/**
 * Runs a script's `main`: an error is printed as `<name>: <message>` on stderr and the exit code
 * set to 1 (argument errors have already exited through commander).
 */
export async function runScript(name: string, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    note(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
