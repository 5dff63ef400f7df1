/**
 * Flag parsing shared by the subcommands: strict (an unknown flag or a stray argument is a usage
 * error, printed with the command's usage) on top of `node:util`'s `parseArgs`. No subcommand's
 * own flags are declared here.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A command-line mistake: printed with the command's usage, exit status 1. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses a subcommand's flags strictly: unknown flags and stray arguments are usage errors. */
export function parseFlags<T extends Options>(
  args: string[],
  options: T,
): ReturnType<typeof parseArgs<{ options: T; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** A non-negative integer flag value, or the default. */
export function intFlag(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, got '${value}'`);
  return Number(value);
}
