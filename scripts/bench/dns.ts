// DNS benchmark of a dev agent: `node --import tsx scripts/bench/dns.ts`.
// Starts `dist/cairn agent -dev` on free ports, registers 1,000 services
// (svc-0 … svc-999, one instance each, through /v1/agent/service/register),
// then runs dnsperf over UDP for A and for SRV lookups of random services:
// first flat out for CAIRN_BENCH_SECONDS (default 20) for queries/s and the
// average latency, then for 5 s at CAIRN_BENCH_RATE queries/s (default
// 20000, the target) with dnsperf's per-query verbose lines for p50/p99
// (verbose output costs dnsperf CPU, so it does not run in the qps phase).
// CAIRN_BENCH_CLIENTS (default 2) and CAIRN_BENCH_OUTSTANDING (default 20)
// set dnsperf's clients and queries in flight. CAIRN_BENCH_HCL passes one
// -hcl snippet to the agent (compare `dns_config { disable_compression = true }`).
// The machine may be shared (dnsperf itself takes a core): each row also
// shows the agent's CPU time per query and the rate one whole core would give.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startDevAgent, tempDir, waitFor } from "../e2e/harness.ts";

const seconds = Number(process.env.CAIRN_BENCH_SECONDS ?? 20);
const clients = Number(process.env.CAIRN_BENCH_CLIENTS ?? 2);
const outstanding = Number(process.env.CAIRN_BENCH_OUTSTANDING ?? 20);
const latencyRate = Number(process.env.CAIRN_BENCH_RATE ?? 20_000);
const serviceCount = 1_000;

function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

async function register(http: string): Promise<void> {
  const batch = 50;
  for (let i = 0; i < serviceCount; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, serviceCount - i) }, async (_, k) => {
      const n = i + k;
      const r = await fetch(`${http}/v1/agent/service/register`, {
        method: "PUT",
        body: JSON.stringify({ Name: `svc-${n}`, Port: 10_000 + n, Tags: ["bench"] }),
      });
      if (!r.ok) throw new Error(`register svc-${n}: ${r.status} ${await r.text()}`);
    }));
  }
}

interface PerfResult {
  qps: number;
  sent: number;
  completed: number;
  lost: number;
  avgMs: number;
  p50Ms: number;
  p99Ms: number;
  rcodes: string;
}

function runDnsperf(dataFile: string, port: number, options: { seconds: number; verbose: boolean; maxQps?: number }): Promise<PerfResult> {
  const args = ["-s", "127.0.0.1", "-p", String(port), "-d", dataFile, "-l", String(options.seconds), "-c", String(clients), "-q", String(outstanding)];
  if (options.verbose) args.push("-v");
  if (options.maxQps) args.push("-Q", String(options.maxQps));
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/dnsperf", args, { stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const latencies: number[] = [];
    let partial = "";
    child.stdout.on("data", (d: Buffer) => {
      const text = partial + d.toString();
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        // verbose per-query line: "> NOERROR svc-1.service.consul A 0.000321"
        if (line.startsWith("> ")) {
          const v = Number(line.slice(line.lastIndexOf(" ") + 1));
          if (Number.isFinite(v)) latencies.push(v * 1000);
        } else tail += line + "\n";
      }
    });
    child.stderr.on("data", (d: Buffer) => { tail += d.toString(); });
    child.once("error", reject);
    child.once("exit", () => {
      tail += partial;
      const num = (re: RegExp) => Number(re.exec(tail)?.[1] ?? NaN);
      latencies.sort((a, b) => a - b);
      const pct = (p: number) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]! : NaN;
      resolve({
        qps: num(/Queries per second:\s+([\d.]+)/),
        sent: num(/Queries sent:\s+(\d+)/),
        completed: num(/Queries completed:\s+(\d+)/),
        lost: num(/Queries lost:\s+(\d+)/),
        avgMs: num(/Average Latency \(s\):\s+([\d.]+)/) * 1000,
        p50Ms: pct(0.5),
        p99Ms: pct(0.99),
        rcodes: /Response codes:\s+(.*)/.exec(tail)?.[1] ?? "?",
      });
    });
  });
}

async function main(): Promise<void> {
  const agent = await startDevAgent(process.env.CAIRN_BENCH_HCL ? ["-hcl", process.env.CAIRN_BENCH_HCL] : []);
  const dir = tempDir("cairn-bench-dns-");
  try {
    const dnsPort = agent.dnsPort;
    const t0 = Date.now();
    await register(agent.http);
    console.log(`registered ${serviceCount} services in ${Date.now() - t0} ms; agent pid ${agent.proc.pid}, DNS port ${dnsPort}`);
    // Wait for anti-entropy to put them in the catalog (at most 10 s, then go on).
    await waitFor(async () => Object.keys((await (await fetch(`${agent.http}/v1/agent/services`)).json()) as object).length >= serviceCount, {
      timeoutMs: 10_000,
      what: "the services",
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1_000));
    console.log(`dnsperf: ${seconds} s per phase, ${clients} clients, ${outstanding} outstanding, UDP, no EDNS`);
    console.log(`p50/p99: a separate 5 s run at ${latencyRate} queries/s with per-query latencies`);
    console.log("phase  qps       avg ms  p50 ms  p99 ms  lost  agent CPU µs/query  qps per agent core  rcodes");
    for (const type of ["A", "SRV"]) {
      const file = join(dir.path, `${type}.txt`);
      const lines: string[] = [];
      for (let i = 0; i < 10_000; i++) lines.push(`svc-${(i * 7919) % serviceCount}.service.consul ${type}`);
      writeFileSync(file, lines.join("\n") + "\n");
      const cpu0 = cpuSeconds(agent.proc.pid);
      const r = await runDnsperf(file, dnsPort, { seconds, verbose: false });
      const cpuPerQueryUs = ((cpuSeconds(agent.proc.pid) - cpu0) / r.completed) * 1e6;
      const lat = await runDnsperf(file, dnsPort, { seconds: 5, verbose: true, maxQps: latencyRate });
      r.p50Ms = lat.p50Ms;
      r.p99Ms = lat.p99Ms;
      console.log(
        `${type.padEnd(6)} ${r.qps.toFixed(0).padEnd(9)} ${r.avgMs.toFixed(3).padEnd(7)} ${r.p50Ms.toFixed(3).padEnd(7)} ${r.p99Ms.toFixed(3).padEnd(7)} ${String(r.lost).padEnd(5)} ${cpuPerQueryUs.toFixed(1).padEnd(19)} ${(1e6 / cpuPerQueryUs).toFixed(0).padEnd(19)} ${r.rcodes}`,
      );
    }
  } finally {
    await agent.stop();
    dir.remove();
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
