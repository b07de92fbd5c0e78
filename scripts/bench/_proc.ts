// What the benches read of a process and the machine from /proc: the load
// average printed beside every figure, a process's RSS and peak RSS, and
// the CPU time it has used.
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";

export function load(): string {
  return `load ${loadavg().map((x) => x.toFixed(2)).join(" ")}`;
}

/** VmRSS and VmHWM (peak) of a process, MiB; NaN without a pid. */
export function rssMiB(pid: number | undefined): { rss: number; hwm: number } {
  if (pid === undefined) return { rss: NaN, hwm: NaN };
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
  return { rss: kib("VmRSS") / 1024, hwm: kib("VmHWM") / 1024 };
}

/** CPU (user + system) a process has used, ms (clock ticks are 10 ms on Linux). */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
