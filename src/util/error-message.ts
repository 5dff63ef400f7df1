/**
 * The text of anything thrown. JavaScript lets code throw any value, and the product shows what
 * went wrong to a person (the terminal, a pull request, a log line): an `Error` by its message,
 * anything else as a string. One home for that rule instead of a copy in each module that reports.
 */

/** The message of an `Error`, or the value as a string. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
