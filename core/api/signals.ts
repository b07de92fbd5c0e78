// A signal that follows others without leaving listeners behind: each
// blocking-query round gets its own, and dispose() unhooks it, so a
// long-running loop does not pile abort listeners onto a long-lived signal.
export function linkedSignal(...sources: ReadonlyArray<AbortSignal | undefined>): { signal: AbortSignal; dispose(): void } {
  const ctl = new AbortController();
  const live = sources.filter((s): s is AbortSignal => s !== undefined);
  const onAbort = (): void => ctl.abort();
  for (const s of live) {
    if (s.aborted) {
      ctl.abort();
      break;
    }
    s.addEventListener("abort", onAbort, { once: true });
  }
  return {
    signal: ctl.signal,
    dispose() {
      for (const s of live) s.removeEventListener("abort", onAbort);
    },
  };
}
