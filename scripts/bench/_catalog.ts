// The catalog benchmarks' shared phases (catalog.ts, scale.ts): health reads
// at N keep-alive connections, and blocking watchers of one service woken by
// a registration.
import { Agent, request } from "node:http";
import { acceptGzip, httpCall, replyText } from "./_http.ts";

export interface Target {
  host: string;
  port: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]!;
}

export interface GetPhaseResult {
  ops: number;
  perSec: number;
  p50: number;
  p99: number;
  errors: number;
  /** Instances in the first good answer. */
  entries: number;
}

/**
 * GET /v1/health/service/svc-<n>?passing for `seconds` at `conns`
 * connections, round-robin over svc-0 … svc-<services - 1>: every service
 * once before any comes again.
 */
export async function healthGetPhase(target: Target, options: { conns: number; seconds: number; services: number; gzip?: boolean }): Promise<GetPhaseResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.conns });
  const lat: number[] = [];
  let errors = 0;
  let entries = 0;
  const until = performance.now() + options.seconds * 1000;
  let i = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: options.conns }, async () => {
    while (performance.now() < until) {
      const svc = i++ % options.services;
      const s = performance.now();
      const r = await httpCall(target, agent, "GET", `/v1/health/service/svc-${svc}?passing`, undefined, options.gzip ? acceptGzip : undefined);
      lat.push(performance.now() - s);
      if (r.status !== 200) errors++;
      else if (entries === 0) entries = (JSON.parse(replyText(r)) as unknown[]).length;
    }
  }));
  const elapsed = (performance.now() - t0) / 1000;
  agent.destroy();
  lat.sort((a, b) => a - b);
  return { ops: lat.length, perSec: lat.length / elapsed, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), errors, entries };
}

export interface FanoutOptions {
  watchers: number;
  /** The watchers' `wait=` (e.g. "60s"). */
  wait: string;
  /** How long to wait for every watcher to connect, ms. */
  connectMs: number;
  /** Pause after they connected, for every request to reach the agent and park, ms. */
  settleMs: number;
  /** How long to wait for the answers after the watched service's registration, ms. */
  answerMs: number;
  /** A registration body of another service (must wake no watcher). */
  other: string;
  /** A registration body of svc-0 (must wake every watcher). */
  watched: string;
  /** Ask for gzipped answers (Accept-Encoding: gzip), as Go's HTTP client does. */
  gzip?: boolean;
  /** The server's CPU time so far, ms (from /proc when it runs here). */
  serverCpuMs?: () => number;
}

export interface FanoutResult {
  connected: number;
  wokenByOther: number;
  answered: number;
  /** Until the last watcher had its answer after the watched registration, ms. */
  allMs: number;
  p50: number;
  p99: number;
  errors: number;
  /** Instances in the first watcher's answer. */
  entries: number;
  /** Bytes of the first watcher's answer as sent (gzipped when asked for). */
  bytes: number;
  /** CPU this (client) process spent from the watched registration until the last answer, ms. */
  clientCpuMs: number;
  /** The same for the server (options.serverCpuMs), NaN when not known. */
  serverCpuMs: number;
}

/** Parks `watchers` blocking queries on svc-0, registers another service, then svc-0, and times the wake-ups. */
export async function watcherFanout(target: Target, options: FanoutOptions): Promise<FanoutResult> {
  const { watchers } = options;
  const setup = new Agent({ keepAlive: true, maxSockets: 1 });
  const first = await httpCall(target, setup, "GET", "/v1/health/service/svc-0?passing");
  const index = first.index;
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  let connected = 0;
  let answered = 0;
  let errors = 0;
  let entries = 0;
  let bytes = 0;
  let putAt = Infinity;
  let clientCpuAt = process.cpuUsage();
  let clientCpuMs = NaN;
  let serverCpuAt = NaN;
  let serverCpuMs = NaN;
  let otherPhase = true;
  let wokenByOther = 0;
  const wake: number[] = [];
  let allDone: () => void = () => {};
  const done = new Promise<void>((r) => (allDone = r));
  const finish = (): void => {
    const c = process.cpuUsage(clientCpuAt);
    clientCpuMs = (c.user + c.system) / 1000;
    serverCpuMs = (options.serverCpuMs?.() ?? NaN) - serverCpuAt;
    allDone();
  };
  for (let i = 0; i < watchers; i++) {
    const path = `/v1/health/service/svc-0?passing&index=${index}&wait=${options.wait}`;
    const req = request({ host: target.host, port: target.port, method: "GET", path, agent, ...(options.gzip ? { headers: acceptGzip } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      // Only the first answer is parsed (to count its entries); the rest are drained.
      if (i === 0) res.on("data", (c: Buffer) => chunks.push(c));
      else res.resume();
      res.on("end", () => {
        const t = performance.now();
        if (otherPhase) wokenByOther++;
        else {
          answered++;
          wake.push(t - putAt);
          if (i === 0) {
            const body = Buffer.concat(chunks);
            bytes = body.length;
            entries = (JSON.parse(replyText({ body, gzipped: res.headers["content-encoding"] === "gzip" })) as unknown[]).length;
          }
        }
        if (answered + wokenByOther + errors >= watchers) finish();
      });
    });
    req.on("socket", () => connected++);
    req.on("error", () => {
      errors++;
      if (answered + wokenByOther + errors >= watchers) finish();
    });
    req.end();
  }
  const deadline = Date.now() + options.connectMs;
  while (connected < watchers && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, options.settleMs));
  await httpCall(target, setup, "PUT", "/v1/catalog/register", options.other);
  await new Promise((r) => setTimeout(r, 1_000));
  otherPhase = false;
  clientCpuAt = process.cpuUsage();
  serverCpuAt = options.serverCpuMs?.() ?? NaN;
  putAt = performance.now();
  await httpCall(target, setup, "PUT", "/v1/catalog/register", options.watched);
  await Promise.race([done, new Promise((r) => setTimeout(r, options.answerMs))]);
  agent.destroy();
  setup.destroy();
  wake.sort((a, b) => a - b);
  return { connected, wokenByOther, answered, allMs: wake.length ? wake[wake.length - 1]! : NaN, p50: percentile(wake, 0.5), p99: percentile(wake, 0.99), errors, entries, bytes, clientCpuMs, serverCpuMs };
}
