/**
 * A bound on how long to wait for something that may never answer (a Redis reply while Redis is
 * gone, a graceful close). It only stops the waiting; it cancels nothing, so whatever was awaited
 * may still finish later.
 */

/** Resolves `promise`, or undefined after `ms` (the timer does not hold the process). */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
