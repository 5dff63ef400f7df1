/**
 * The one error the App's start-up throws on purpose: Redis unreachable, a port taken, a
 * required setting missing. The command line prints its message alone, without a stack; anything
 * else thrown while starting is a bug and keeps its stack.
 */

/** The App could not start (Redis unreachable, port taken); the message says which and why. */
export class ServerStartError extends Error {
  override name = 'ServerStartError';
}
