// Gossip benchmark (not a test): N cairn client agents, then N stock serf
// agents, on 127.0.0.1, one pool after the other. For each side:
//   - convergence: all agents up and standalone; at t0 every agent is told to
//     join the first one; time until every agent lists all N alive;
//   - failure detection: kill -9 one agent; time until every other agent
//     lists it failed; BENCH_KILLS times (default 9), one agent after the
//     other with a pause between, and the median is compared (see below);
//   - steady state: RSS and CPU per agent over a few seconds of idle gossip.
// Then both sides and the ratios. Usage:
//   node --import tsx scripts/bench/gossip.ts [N=50]   (CAIRN_BIN overrides dist/cairn)
// Everything is killed by PID at the end (scripts/e2e/harness.ts); each phase has a time limit.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { Agent as HttpAgent, request } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { decodeMultiStream, encode } from "@msgpack/msgpack";
import { cairnBin, exitOf, serfBin, startAgent, startSerf, waitFor, type Proc } from "../e2e/harness.ts";
import { sleep, until } from "../../core/testing/until.ts";

const N = Number(process.argv[2] ?? 50);
const bin = process.env.CAIRN_BIN ?? cairnBin;
const phaseLimitMs = 90_000;
const steadyMs = 5_000;
// BENCH_SETTLE_MS: how long after all-see-all the steady state starts (default 2 s).
const settleMs = Math.max(0, Number(process.env.BENCH_SETTLE_MS ?? 2_000));
const tick = 100; // /proc clock ticks per second (USER_HZ)
// How often every agent's member list is read while waiting (both sides alike). Each read of a
// cairn agent is an HTTP request its own event loop answers (CPU of its own with 50 members and
// Consul tags), so polling 50 agents every 20 ms took much of the machine from the gossip being
// measured (serf's msgpack RPC costs far less); every 100 ms costs little and still resolves 0.1 s
// (figures in docs/performance.md).
const pollMs = Number(process.env.BENCH_POLL_MS ?? 100);
const trace = !!process.env.BENCH_TRACE; // progress once a second while waiting (BENCH_TRACE_MS=period)
const traceEveryMs = Number(process.env.BENCH_TRACE_MS ?? 1_000);
const sides = (process.env.BENCH_SIDES ?? "cairn,serf").split(",");
// Detection time is mostly luck on both sides: the wait until some member's round-robin probe
// reaches the killed agent (an exponential with a 1 s mean at N=50), the probe itself (1 s; 0.5 s
// in cairn, whose TCP fallback ping is refused by a killed agent's host), then the suspicion
// timeout (4 * log10(N) s: 6.8 s), then gossip of the dead message (faster in cairn; see
// docs/performance.md). One kill per side compares two such draws, whose spread is larger than the
// difference between the implementations; the median of 9 kills compares the implementations.
const kills = Math.max(1, Number(process.env.BENCH_KILLS ?? 9));
const killPauseMs = 3_000;
// BENCH_LOG_DIR=dir: agents log at info level into dir/<name>.log (for reading the suspicion
// timeline: who suspected the victim when, how many confirmations); costs a little CPU on both sides.
const logDir = process.env.BENCH_LOG_DIR;
const logLevel = logDir ? (process.env.BENCH_LOG_LEVEL ?? "info") : "warn";
function agentStdio(name: string): "ignore" | { file: string } {
  if (!logDir) return "ignore";
  mkdirSync(logDir, { recursive: true });
  return { file: join(logDir, `${name}.log`) };
}

function median(xs: number[]): number {
  if (xs.length === 0 || xs.some(Number.isNaN)) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

interface Member { name: string; status: string }

interface BenchAgent {
  name: string;
  proc: Proc;
  gossipAddr: string;
  members(): Promise<Member[]>;
  join(addr: string): Promise<void>;
  close(): void;
}

// ---- serf RPC (msgpack over TCP: header {Command, Seq} + body; replies {Seq, Error} + body) ----

class SerfRpc {
  #sock: Socket;
  #seq = 0;
  #pending = new Map<number, { body: boolean; resolve: (v: unknown) => void; reject: (e: Error) => void; header?: { Error: string } }>();
  #waitingBody: number | undefined;

  private constructor(sock: Socket) {
    this.#sock = sock;
    void this.#read();
  }

  static async open(addr: string): Promise<SerfRpc> {
    const [host, port] = addr.split(":");
    const sock = await new Promise<Socket>((ok, fail) => {
      const s = connect(Number(port), host!, () => ok(s));
      s.once("error", fail);
    });
    const rpc = new SerfRpc(sock);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        rpc.call("handshake", { Version: 1 }, false),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("handshake timeout")), 2_000))),
      ]);
    } catch (err) {
      rpc.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return rpc;
  }

  async #read(): Promise<void> {
    try {
      for await (const obj of decodeMultiStream(this.#sock as AsyncIterable<Uint8Array>)) {
        if (this.#waitingBody !== undefined) {
          const p = this.#pending.get(this.#waitingBody)!;
          this.#pending.delete(this.#waitingBody);
          this.#waitingBody = undefined;
          p.resolve(obj);
          continue;
        }
        const h = obj as { Seq: number; Error: string };
        const p = this.#pending.get(h.Seq);
        if (!p) continue;
        if (h.Error) {
          this.#pending.delete(h.Seq);
          p.reject(new Error(h.Error));
        } else if (p.body) {
          this.#waitingBody = h.Seq;
        } else {
          this.#pending.delete(h.Seq);
          p.resolve(undefined);
        }
      }
    } catch { /* closed */ }
  }

  call(command: string, body: unknown, hasReply: boolean): Promise<unknown> {
    const seq = this.#seq++;
    return new Promise((resolve, reject) => {
      this.#pending.set(seq, { body: hasReply, resolve, reject });
      const head = encode({ Command: command, Seq: seq });
      this.#sock.write(body === undefined ? head : Buffer.concat([head, encode(body)]));
    });
  }

  close(): void {
    this.#sock.destroy();
  }
}

async function startSerfAgent(i: number): Promise<BenchAgent> {
  const name = `serf${i}`;
  // The same member metadata a cairn client gossips (Consul's tags), so both sides move the same bytes;
  // BENCH_SERF_PLAIN=1 runs serf with no tags instead.
  const id = `${(0x10000000 + i).toString(16)}-0000-4000-8000-${String(i).padStart(12, "0")}`;
  const tags = process.env.BENCH_SERF_PLAIN ? [] : ["role=node", "dc=dc1", "segment=", `id=${id}`, "vsn=2", "vsn_min=2", "vsn_max=3", "build=0.1.0:0123abcd"].flatMap((t) => ["-tag", t]);
  const s = await startSerf(name, { args: [`-log-level=${logLevel}`, ...tags], stdio: agentStdio(name), wait: false });
  const r = await waitFor(() => SerfRpc.open(s.rpcAddr), { timeoutMs: 10_000, intervalMs: 50, what: `${name} to start`, failOn: exitOf(s.proc, name) });
  return {
    name,
    proc: s.proc,
    gossipAddr: s.addr,
    async members() {
      const body = (await r.call("members", undefined, true)) as { Members: Array<{ Name: string; Status: string }> };
      return body.Members.map((m) => ({ name: m.Name, status: m.Status }));
    },
    async join(addr) {
      await r.call("join", { Existing: [addr], Replay: false }, true);
    },
    close: () => r.close(),
  };
}

const statusNames = ["none", "alive", "leaving", "left", "failed"];

function httpCall(agent: HttpAgent, port: number, method: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((ok, fail) => {
    const req = request({ host: "127.0.0.1", port, method, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", fail);
    });
    req.on("error", fail);
    req.end();
  });
}

async function startCairnAgent(i: number): Promise<BenchAgent> {
  const name = `cairn${i}`;
  // `agent -node -data-dir -bind -client -serf-lan-port -http-port -dns-port=-1 -log-level`.
  const a = await startAgent(name, { args: [`-log-level=${logLevel}`], bin, stdio: agentStdio(name), ready: false });
  // One kept-alive connection per agent over node:http: the poller shares the machine with the
  // agents, and fetch (undici) took several times the CPU per request.
  const keepAlive = new HttpAgent({ keepAlive: true, maxSockets: 2 });
  const call = (method: string, path: string) => httpCall(keepAlive, a.httpPort, method, path);
  await waitFor(async () => (await call("GET", "/v1/agent/self")).status === 200, { timeoutMs: 20_000, intervalMs: 50, what: `${name} to start`, failOn: exitOf(a.proc, name) });
  return {
    name,
    proc: a.proc,
    gossipAddr: a.serfAddr,
    async members() {
      const r = await call("GET", "/v1/agent/members");
      if (r.status !== 200) throw new Error(`members: HTTP ${r.status}`);
      const list = JSON.parse(r.body) as Array<{ Name: string; Status: number }>;
      return list.map((m) => ({ name: m.Name, status: statusNames[m.Status] ?? "?" }));
    },
    async join(addr) {
      const r = await call("PUT", `/v1/agent/join/${addr}`);
      if (r.status !== 200) throw new Error(r.body);
    },
    close: () => keepAlive.destroy(),
  };
}

/** The 10/25/50/75/90/100 % points of xs, for traces. */
function deciles(xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  return [0.1, 0.25, 0.5, 0.75, 0.9, 1].map((q) => sorted[Math.max(0, Math.ceil(q * xs.length) - 1)]?.toFixed(0)).join(" / ");
}

/**
 * Poll every agent until pred holds for all; returns ms since t0 (or NaN after the limit).
 * Each agent has its own loop (ask, then wait pollMs): in lock-step rounds one agent slow to
 * answer held back the next look at all the others, and an agent's time read late by up to a
 * whole round. An agent's time is when the answer that satisfied pred arrived.
 */
async function untilAll(agents: BenchAgent[], t0: number, pred: (a: BenchAgent, m: Member[]) => boolean, doneAt?: number[]): Promise<number> {
  let done = 0;
  let fewestAlive = Infinity;
  let last = Number.NaN;
  const deadline = t0 + phaseLimitMs;
  const tracer = trace ? setInterval(() => {
    console.log(`    ${(performance.now() - t0).toFixed(0)} ms: ${done}/${agents.length} done, fewest alive seen ${fewestAlive}`);
    fewestAlive = Infinity;
  }, traceEveryMs) : undefined;
  await Promise.all(agents.map(async (a) => {
    const at = await until(async () => {
      const m = await a.members();
      fewestAlive = Math.min(fewestAlive, m.filter((x) => x.status === "alive").length);
      return pred(a, m) ? performance.now() - t0 : undefined;
    }, `${a.name} to agree`, { timeoutMs: Math.max(0, deadline - performance.now()), intervalMs: pollMs }).catch(() => undefined);
    if (at === undefined) return;
    done++;
    doneAt?.push(at);
    last = Number.isNaN(last) ? at : Math.max(last, at);
  }));
  clearInterval(tracer);
  return done === agents.length ? last : Number.NaN;
}

// VmRSS is the headline; RssAnon (heaps, stacks) and RssFile (mapped pages of the executable and its
// libraries, which depend on the page cache: a binary written a moment ago faults in more pages around
// each touch) say which part moved.
function procTimes(pid: number): { cpuTicks: number; rssKiB: number; anonKiB: number; fileKiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { cpuTicks, rssKiB: kib("VmRSS"), anonKiB: kib("RssAnon"), fileKiB: kib("RssFile") };
}

interface Result {
  startMs: number;
  convergeMs: number;
  /** Median of the kills. */
  detectMs: number;
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  cpuPct: number;
}

async function runSide(label: string, start: (i: number) => Promise<BenchAgent>): Promise<Result> {
  console.log(`# ${label}: starting ${N} agents`);
  const s0 = performance.now();
  const agents: BenchAgent[] = [];
  for (let i = 0; i < N; i += 10) {
    agents.push(...(await Promise.all(Array.from({ length: Math.min(10, N - i) }, (_, k) => start(i + k)))));
  }
  const startMs = performance.now() - s0;
  // Let start-up work (JIT, first anti-entropy attempts) settle so the join storm measures gossip.
  await sleep(3_000);

  // Convergence: everyone joins agent 0 at once.
  const t0 = performance.now();
  const benchCpu0 = process.cpuUsage();
  let joinErrors = 0;
  const c0 = agents.map((a) => procTimes(a.proc.pid));
  let firstJoinError = "";
  const joinedAt: number[] = [];
  // Both clocks, to line the storm up with agent logs (epoch) and `perf record -k CLOCK_MONOTONIC`.
  if (trace) console.log(`    t0 at ${Date.now()} (epoch ms), ${(Number(process.hrtime.bigint() / 1000n) / 1e6).toFixed(6)} (monotonic s)`);
  await Promise.all(agents.slice(1).map((a) => a.join(agents[0]!.gossipAddr).then(() => void joinedAt.push(performance.now() - t0), (err: unknown) => {
    joinErrors++;
    firstJoinError ||= String(err).slice(0, 200);
  })));
  const joinMs = performance.now() - t0;
  if (joinErrors > 0) console.log(`  ${joinErrors} of ${N - 1} join requests failed (the node still joins later through gossip), e.g. ${firstJoinError}`);
  const doneAt: number[] = [];
  const convergeMs = await untilAll(agents, t0, (_a, m) => m.filter((x) => x.status === "alive").length === N, doneAt);
  if (trace) {
    console.log(`    join calls returned (10/25/50/75/90/100%): ${deciles(joinedAt)} ms`);
    console.log(`    agents saw all ${N} (10/25/50/75/90/100%): ${deciles(doneAt)} ms`);
    const benchCpu = process.cpuUsage(benchCpu0);
    console.log(`    this bench process used ${((benchCpu.user + benchCpu.system) / 1e6).toFixed(2)} CPU-s meanwhile`);
  }
  const c1 = agents.map((a) => procTimes(a.proc.pid));
  const stormCpuS = c1.reduce((s, x, i) => s + (x.cpuTicks - c0[i]!.cpuTicks), 0) / tick;
  console.log(`  all-see-all: ${convergeMs.toFixed(0)} ms (join calls returned after ${joinMs.toFixed(0)} ms; agents used ${stormCpuS.toFixed(1)} CPU-s in all, agent 0 ${((c1[0]!.cpuTicks - c0[0]!.cpuTicks) / tick).toFixed(1)} CPU-s)`);

  // Steady state: RSS and CPU per agent over steadyMs.
  await sleep(settleMs);
  const before = agents.map((a) => procTimes(a.proc.pid));
  const w0 = performance.now();
  await sleep(steadyMs);
  const wallS = (performance.now() - w0) / 1000;
  const after = agents.map((a) => procTimes(a.proc.pid));
  const cpuPct = after.reduce((s, x, i) => s + (x.cpuTicks - before[i]!.cpuTicks), 0) / tick / wallS / N * 100;
  const rssMiB = after.reduce((s, x) => s + x.rssKiB, 0) / N / 1024;
  const anonMiB = after.reduce((s, x) => s + x.anonKiB, 0) / N / 1024;
  const fileMiB = after.reduce((s, x) => s + x.fileKiB, 0) / N / 1024;
  console.log(`  steady state: RSS ${rssMiB.toFixed(1)} MiB/agent (anon ${anonMiB.toFixed(1)}, file ${fileMiB.toFixed(1)}), CPU ${cpuPct.toFixed(2)} %/agent`);

  // Failure detection: kill -9 one agent from the middle on, one after the other.
  const detectAll: number[] = [];
  const dead = new Set<BenchAgent>();
  for (let k = 0; k < kills && k < N - 2; k++) {
    if (k > 0) await sleep(killPauseMs);
    const victim = agents[(Math.floor(N / 2) + k) % N]!;
    dead.add(victim);
    const others = agents.filter((a) => !dead.has(a));
    const k0 = performance.now();
    process.kill(victim.proc.pid, "SIGKILL");
    if (logDir) console.log(`  killed ${victim.name} at ${new Date().toISOString()}`);
    const markedAt: number[] = [];
    const ms = await untilAll(others, k0, (_a, m) => m.some((x) => x.name === victim.name && x.status === "failed"), markedAt);
    detectAll.push(ms);
    console.log(`  kill -9 ${victim.name} → failed everywhere: ${ms.toFixed(0)} ms`);
    if (trace) console.log(`    agents saw it failed (10/25/50/75/90/100%): ${deciles(markedAt)} ms`);
  }
  const detectMs = median(detectAll);
  if (detectAll.length > 1) console.log(`  detection over ${detectAll.length} kills: median ${detectMs.toFixed(0)} ms, ${Math.min(...detectAll).toFixed(0)}–${Math.max(...detectAll).toFixed(0)} ms`);

  for (const a of agents) {
    a.close();
    void a.proc.kill("SIGKILL");
  }
  await sleep(500);
  return { startMs, convergeMs, detectMs, rssMiB, anonMiB, fileMiB, cpuPct };
}

if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build (or set CAIRN_BIN)`);
if (!existsSync(serfBin)) throw new Error(`${serfBin} is missing`);
const skipped: Result = { startMs: NaN, convergeMs: NaN, detectMs: NaN, rssMiB: NaN, anonMiB: NaN, fileMiB: NaN, cpuPct: NaN };
const cairn = sides.includes("cairn") ? await runSide("cairn", startCairnAgent) : skipped;
const serf = sides.includes("serf") ? await runSide("serf 0.9.4", startSerfAgent) : skipped;
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "n/a");
console.log(`\n# gossip bench, N=${N} per side, 127.0.0.1, LAN timings on both sides, serf ${process.env.BENCH_SERF_PLAIN ? "without tags" : "with Consul's tags"}, members polled every ${pollMs} ms`);
console.log("metric                         cairn        serf      cairn/serf");
const row = (name: string, a: number, b: number, unit: string) =>
  console.log(`${name.padEnd(30)} ${`${a.toFixed(unit === "%" ? 2 : 0)} ${unit}`.padStart(10)} ${`${b.toFixed(unit === "%" ? 2 : 0)} ${unit}`.padStart(10)}   ${ratio(a, b)}`);
row("start N agents", cairn.startMs, serf.startMs, "ms");
row("all-see-all after joins", cairn.convergeMs, serf.convergeMs, "ms");
row(kills > 1 ? `kill -9 → failed, median of ${kills}` : "kill -9 → failed on all", cairn.detectMs, serf.detectMs, "ms");
console.log(`${"idle RSS per agent".padEnd(30)} ${`${cairn.rssMiB.toFixed(1)} MiB`.padStart(10)} ${`${serf.rssMiB.toFixed(1)} MiB`.padStart(10)}   ${ratio(cairn.rssMiB, serf.rssMiB)}`);
console.log(`${"  of which RssAnon".padEnd(30)} ${`${cairn.anonMiB.toFixed(1)} MiB`.padStart(10)} ${`${serf.anonMiB.toFixed(1)} MiB`.padStart(10)}`);
console.log(`${"  of which RssFile".padEnd(30)} ${`${cairn.fileMiB.toFixed(1)} MiB`.padStart(10)} ${`${serf.fileMiB.toFixed(1)} MiB`.padStart(10)}`);
row("idle CPU per agent", cairn.cpuPct, serf.cpuPct, "%");
console.log(`targets: all-see-all ≤ 1500 ms (${cairn.convergeMs <= 1500 ? "met" : "NOT met"}), detection ≤ 1.0× serf${kills > 1 ? " (medians)" : ""} (${cairn.detectMs <= serf.detectMs ? "met" : "NOT met"}), idle RSS ≤ 50 MiB (${cairn.rssMiB <= 50 ? "met" : "NOT met"})`);
process.exit(0);
