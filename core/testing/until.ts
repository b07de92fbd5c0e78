// The one real-time poller for tests that wait on real sockets, processes or
// timers (unit tests of *_node.ts files, the e2e harness, benchmarks).
// Test-only: it reads real time, which production code outside *_node.ts may
// not. Simulations never need it: they use SimClock.runUntil/advanceUntil.

export interface UntilOptions {
  /** Give up after this long (real ms). Default 5000. */
  timeoutMs?: number;
  /** Wait between two calls (real ms); 0 polls on every turn of the event loop. Default 20. */
  intervalMs?: number;
  /**
   * Settles when the thing waited on can no longer come (a child process
   * exited): a rejection fails the wait at once with its reason; a
   * resolution fails it with "gone before <what>".
   */
  failOn?: Promise<unknown>;
}

/**
 * Call `fn` until it returns a truthy value, and return that value. A call
 * that throws (or rejects) counts as "not yet"; after `timeoutMs` the wait
 * fails with "Timed out waiting for <what>" and the last error, if any.
 */
export async function until<T>(
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  options: UntilOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 20;
  const deadline = performance.now() + timeoutMs;
  let gone: Error | undefined;
  options.failOn?.then(
    () => { gone ??= new Error(`Gone before ${what}`); },
    (err: unknown) => { gone ??= err instanceof Error ? err : new Error(String(err)); },
  );
  let lastError: unknown;
  for (;;) {
    if (gone) throw gone;
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() >= deadline) {
      const why = lastError === undefined ? "" : `: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`Timed out waiting for ${what} after ${timeoutMs} ms${why}`);
    }
    await (intervalMs <= 0 ? new Promise<void>((r) => setImmediate(r)) : sleep(intervalMs));
  }
}

/** Resolve after `ms` real milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** `p`, or a rejection "Timed out waiting for <what>" after `timeoutMs` (default 10000). */
export function within<T>(p: Promise<T>, what: string, options: { timeoutMs?: number } = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what} after ${timeoutMs} ms`)), timeoutMs);
    }),
  ]);
}
