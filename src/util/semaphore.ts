/** A counting semaphore: at most `limit` holders at a time, waiters served in arrival order. */
export class Semaphore {
  readonly limit: number;
  #active = 0;
  readonly #waiters: (() => void)[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency must be a positive integer, got ${limit}`);
    this.limit = limit;
  }

  /** Holders right now. */
  get active(): number {
    return this.#active;
  }

  /** Callers queued for a slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Resolves with a release function once a slot is free; release is safe to call twice. */
  async acquire(): Promise<() => void> {
    if (this.#active < this.limit) {
      this.#active++;
    } else {
      // The releasing holder hands its slot over directly, so #active never dips below the
      // number of real holders and a late arrival cannot overtake a waiter.
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next();
      else this.#active--;
    };
  }

  /** Runs `fn` while holding a slot. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
