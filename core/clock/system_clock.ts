import type { Clock, Timer } from "./clock.ts";

/** Real time: performance.now() and setTimeout. Timers do not keep the process alive. */
export class SystemClock implements Clock {
  now(): number {
    return performance.now();
  }
  wallNow(): number {
    return Date.now();
  }
  setTimer(ms: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, ms));
    // Deno returns a number; Node a Timeout object with unref().
    const maybe = handle as unknown as { unref?: () => void };
    maybe.unref?.();
    return { cancel: () => clearTimeout(handle) };
  }
}

export const systemClock: Clock = new SystemClock();
