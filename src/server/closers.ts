/**
 * What a started App must close again, in the reverse of the order it was opened: the HTTP server
 * before the workers, the workers before their queues, the queues before their Redis connections.
 * Start-up adds each resource as it opens it, so a start that fails half-way closes exactly what it
 * opened. It does not decide what to close or how; each entry brings its own `close`.
 */
import type { Logger } from 'pino';

/** The App's open resources, closed last-opened first. */
export class Closers {
  readonly #entries: { what: string; close: () => Promise<unknown> }[] = [];

  constructor(private readonly logger: Logger) {}

  /** Registers `close` under `what` (the name a failed close is logged with). */
  add(what: string, close: () => Promise<unknown>): void {
    this.#entries.push({ what, close });
  }

  /** Closes everything added so far, newest first; every close is attempted and a failure is logged. */
  async closeAll(): Promise<void> {
    for (const { what, close } of this.#entries.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        this.logger.warn({ err: error, what }, 'closing failed');
      }
    }
  }
}
