// The only source of time for cairn code. Pure cores never read time
// themselves: they receive `now` in their inputs. Drivers get a Clock.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Monotonic milliseconds; only differences are meaningful. */
  now(): number;
  /** Wall-clock milliseconds since the Unix epoch (for timestamps shown to users). */
  wallNow(): number;
  setTimer(ms: number, fn: () => void): Timer;
}
