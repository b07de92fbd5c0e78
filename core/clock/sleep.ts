// A wait on the injected Clock that an abort ends early. Both ends drop the
// other: a long-lived signal (a watcher's, the elector's) must not gather one
// abort listener per retry.
import type { Clock } from "./clock.ts";

/** Resolves after `ms` on `clock`, or at once when `signal` is (or becomes) aborted. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => {
      timer.cancel();
      resolve();
    };
    const timer = clock.setTimer(ms, () => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
