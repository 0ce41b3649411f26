/** A line to stdout: the tables and the JSON line. */
export const out = (line = ''): boolean => process.stdout.write(`${line}\n`);

/** A line to stderr: progress, kept apart from the tables and the JSON line. */
export const note = (line: string): boolean => process.stderr.write(`${line}\n`);
