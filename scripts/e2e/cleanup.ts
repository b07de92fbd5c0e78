// Per-file cleanup for end-to-end tests: processes and temp dirs handed to
// the tracker are killed (SIGKILL, by PID) and removed after the file's tests.
import { after } from "node:test";
import type { Proc } from "./harness.ts";

export interface Cleanup {
  dir<D extends { remove(): void }>(dir: D): D;
  proc<P extends Proc>(proc: P): P;
}

export function useCleanup(): Cleanup {
  const dirs: Array<{ remove(): void }> = [];
  const procs: Proc[] = [];
  after(async () => {
    for (const p of procs) await p.kill("SIGKILL");
    for (const d of dirs) d.remove();
  });
  return {
    dir: (d) => { dirs.push(d); return d; },
    proc: (p) => { procs.push(p); return p; },
  };
}
