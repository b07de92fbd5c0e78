// What tls-callgrind.ts (a -dev agent) and tls-callgrind-cluster.ts (three
// servers) share: the PUT load at 64 connections over the lean client, the
// functions whose inclusive instruction counts they print, and reading a
// callgrind dump into per-PUT figures.
import { execFileSync } from "node:child_process";
import type { LeanAgent } from "./_lean_http.ts";

export const conns = 64;
const value = Buffer.alloc(64, "v");

/** Node's and OpenSSL's per-record TLS work, the event loop, the optimizing compiler. */
export const watchedTls = [
  "uv_run",
  "OptimizingCompileDispatcher::CompileTask::RunInternal",
  "SSL_read",
  "SSL_write",
  "TLSWrap::ClearOut",
  "TLSWrap::DoWrite",
  "TLSWrap::EncOut",
  "Environment::CheckImmediate",
];

/** `total` PUTs of 64 bytes over 1,000 keys, `conns` at a time. */
export async function putLoad(agent: LeanAgent, total: number): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: conns }, async () => {
    while (i < total) {
      i++;
      const r = await agent.call("PUT", `/v1/kv/bench/k${i % 1000}`, {}, value);
      if (r.status !== 200) throw new Error(`PUT answered ${r.status}`);
    }
  }));
}

/** A dump's inclusive counts per PUT (`n` PUTs counted): the whole program, then each of `watched`. */
export function perPut(dumpFile: string, n: number, watched: readonly string[]): string {
  const text = execFileSync("callgrind_annotate", ["--inclusive=yes", "--threshold=100", dumpFile], { encoding: "utf8", maxBuffer: 64 << 20 });
  // The function itself, not another whose name starts the same (SSL_read, not SSL_read_early_data).
  const count = (name: string): number => {
    const exact = new RegExp(`[:\\s]${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?:[(\\s]|$)`);
    const line = text.split("\n").find((l) => exact.test(l));
    return line ? Number(line.trim().split(/\s+/)[0]!.replaceAll(",", "")) : 0;
  };
  return [`all ${(count("PROGRAM TOTALS") / n / 1000).toFixed(1)}k`, ...watched.map((w) => `${w} ${(count(w) / n / 1000).toFixed(1)}k`)].join(", ");
}
