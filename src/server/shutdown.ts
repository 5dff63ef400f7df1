/**
 * Graceful stop on SIGTERM (Kubernetes, `docker stop`) and SIGINT (Ctrl-C): close once; a further
 * signal while closing is logged and does not kill the process mid-close. The close itself is
 * bounded (the shutdown timeout hands running jobs back), so the process exits within a known time.
 */

/** The part of `process` this needs; tests pass an EventEmitter. */
export type SignalSource = Pick<NodeJS.Process, 'on' | 'removeListener'>;

/**
 * Calls `close` on the first SIGTERM or SIGINT. `closed` resolves with the signal once `close`
 * finished, or rejects with its error (so the caller reports it and exits non-zero, rather than an
 * unhandled rejection killing the process mid-close); `remove()` stops listening.
 */
export function closeOnSignals(
  close: (signal: NodeJS.Signals) => Promise<void>,
  options: { source?: SignalSource; onRepeat?: (signal: NodeJS.Signals) => void } = {},
): { closed: Promise<NodeJS.Signals>; remove(): void } {
  const source = options.source ?? process;
  let resolveClosed: (signal: NodeJS.Signals) => void = () => {};
  let rejectClosed: (error: unknown) => void = () => {};
  const closed = new Promise<NodeJS.Signals>((resolve, reject) => {
    resolveClosed = resolve;
    rejectClosed = reject;
  });
  let started = false;
  const listener = (signal: NodeJS.Signals): void => {
    if (started) {
      options.onRepeat?.(signal);
      return;
    }
    started = true;
    close(signal).then(() => resolveClosed(signal), rejectClosed);
  };
  source.on('SIGTERM', listener);
  source.on('SIGINT', listener);
  return {
    closed,
    remove() {
      source.removeListener('SIGTERM', listener);
      source.removeListener('SIGINT', listener);
    },
  };
}
