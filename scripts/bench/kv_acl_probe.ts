// What an ACL'd KV GET costs a -dev agent, against the same agent without
// ACLs (issue #21): one agent per run, the kv-cluster bench's 100 policies
// and token, then a fixed number of GETs of bench/k<i % 1000> at C
// connections, and the agent's CPU per request from /proc. Under
// PROBE_CALLGRIND=<file> the agent runs its bundle (dist/cairn.cjs) under
// valgrind's callgrind, collecting only during the counted GETs, and the
// instructions per request are printed (load-independent).
//
//   node --import tsx scripts/bench/kv_acl_probe.ts acl|plain [stale|consistent]
//
// PROBE_N (20000) requests after PROBE_WARMUP (5000); PROBE_C (16) connections.
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { freePort, root, run, startProcess, tempDir, waitFor } from "../e2e/harness.ts";
import { LeanAgent } from "./_lean_http.ts";

const mode = process.argv[2] === "acl" ? "acl" : "plain";
const consistency = process.argv[3] ?? "";
const n = Number(process.env.PROBE_N ?? 20_000);
const warmup = Number(process.env.PROBE_WARMUP ?? 5_000);
const conns = Number(process.env.PROBE_C ?? 16);
const callgrindOut = process.env.PROBE_CALLGRIND ?? "";
/** Flags for the agent's node (PROBE_NODE_FLAGS="--trace-gc", with PROBE_LOG=<file> for its output). */
const nodeFlags = (process.env.PROBE_NODE_FLAGS ?? "").split(" ").filter((f) => f !== "");
/**
 * PROBE_CG_TOGGLE=uv__read: count only inside libuv's stream reads, where
 * node parses a request and (microtasks included) answers it, leaving out
 * the agent's timers; the idle dump then measures what little is left.
 */
const toggle = process.env.PROBE_CG_TOGGLE ? [`--toggle-collect=${process.env.PROBE_CG_TOGGLE}`] : [];
const management = "9f6ad4c2-3a86-4f0e-b3b2-6d7f1f8f0a11";

function cpuMicros(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100;
}

async function main(): Promise<void> {
  const dir = tempDir("cairn-acl-probe-");
  const configFile = join(dir.path, "acl.json");
  writeFileSync(configFile, JSON.stringify(mode === "acl" ? { acl: { enabled: true, default_policy: "deny", tokens: { initial_management: management } } } : {}));
  const http = await freePort();
  const args = ["agent", "-dev", `-http-port=${http}`, "-dns-port=-1", `-serf-lan-port=${await freePort()}`, `-serf-wan-port=${await freePort()}`, `-server-port=${await freePort()}`, `-config-file=${configFile}`, "-log-level=warn"];
  const bundle = process.env.PROBE_BUNDLE || join(root, "dist/cairn.cjs");
  const proc = callgrindOut
    ? startProcess("valgrind", ["--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", ...toggle, `--callgrind-out-file=${callgrindOut}`, process.execPath, bundle, ...args], { stdio: "ignore" })
    : startProcess(process.execPath, [...nodeFlags, bundle, ...args], { stdio: process.env.PROBE_LOG ? { file: process.env.PROBE_LOG } : "ignore" });
  const lean = new LeanAgent({ host: "127.0.0.1", port: http }, conns);
  try {
    const call = (method: string, path: string, token: string, body?: Buffer) => lean.call(method, path, token ? { "X-Consul-Token": token } : {}, body);
    await waitFor(async () => {
      try {
        const r = await call("GET", "/v1/status/leader", "");
        return r.status === 200 && r.body.toString() !== '""';
      } catch {
        return false;
      }
    }, { timeoutMs: 120_000, what: "a leader" });
    let token = "";
    if (mode === "acl") {
      await waitFor(async () => (await call("GET", "/v1/acl/token/self", management)).status === 200, { timeoutMs: 60_000, what: "the management token" });
      const policies: { Name: string }[] = [];
      for (let i = 0; i < 100; i++) {
        const rules = i === 42 ? 'key_prefix "bench/" { policy = "write" }' : `key_prefix "other-${i}/" { policy = "write" }\nservice "svc-${i}" { policy = "read" }\nnode_prefix "n${i}-" { policy = "read" }`;
        const r = await call("PUT", "/v1/acl/policy", management, Buffer.from(JSON.stringify({ Name: `p${i}`, Rules: rules })));
        if (r.status !== 200) throw new Error(`policy p${i}: ${r.status} ${r.body.toString()}`);
        policies.push({ Name: `p${i}` });
      }
      const r = await call("PUT", "/v1/acl/token", management, Buffer.from(JSON.stringify({ Description: "bench load", Policies: policies })));
      if (r.status !== 200) throw new Error(`token: ${r.status} ${r.body.toString()}`);
      token = (JSON.parse(r.body.toString()) as { SecretID: string }).SecretID;
    }
    const value = Buffer.alloc(128, 0x61);
    for (let i = 0; i < 1000; i++) {
      const r = await call("PUT", `/v1/kv/bench/k${i}`, token, value);
      if (r.status !== 200) throw new Error(`PUT: ${r.status} ${r.body.toString()}`);
    }
    const q = consistency ? `?${consistency}` : "";
    const load = async (count: number): Promise<void> => {
      let next = 0;
      const worker = async () => {
        while (next < count) {
          const i = next++;
          const r = await call("GET", `/v1/kv/bench/k${i % 1000}${q}`, token);
          if (r.status !== 200) throw new Error(`GET: ${r.status} ${r.body.toString()}`);
        }
      };
      await Promise.all(Array.from({ length: conns }, worker));
    };
    await load(warmup);
    // PROBE_IDLE=<s>: the agent's CPU while no request comes (what it spends per second on its own).
    const idleS = Number(process.env.PROBE_IDLE ?? 0);
    if (idleS > 0) {
      const idle0 = cpuMicros(proc.pid);
      await new Promise((ok) => setTimeout(ok, idleS * 1000));
      console.log(`${mode}: idle ${((cpuMicros(proc.pid) - idle0) / idleS / 1000).toFixed(1)} ms CPU per second`);
    }
    let idleMs = 0;
    if (callgrindOut) {
      await run("callgrind_control", ["-i", "on", String(proc.pid)]);
      // Dump 1: what the agent does on its own (timers, gossip, Raft ticks) for PROBE_CG_IDLE s, subtracted below.
      await run("callgrind_control", ["-z", String(proc.pid)]);
      const i0 = performance.now();
      await new Promise((ok) => setTimeout(ok, Number(process.env.PROBE_CG_IDLE ?? 10) * 1000));
      await run("callgrind_control", ["-d", String(proc.pid)], { timeoutMs: 120_000 });
      idleMs = performance.now() - i0;
      await run("callgrind_control", ["-z", String(proc.pid)]);
    }
    const cpu0 = cpuMicros(proc.pid);
    const self0 = process.cpuUsage();
    const t0 = performance.now();
    await load(n);
    const ms = performance.now() - t0;
    const cpu = cpuMicros(proc.pid) - cpu0;
    const selfUse = process.cpuUsage(self0);
    if (callgrindOut) await run("callgrind_control", ["-d", String(proc.pid)], { timeoutMs: 120_000 });
    const la = loadavg().map((x) => x.toFixed(2)).join(" ");
    console.log(`${mode}${q} n=${n} c=${conns}: ${(n / (ms / 1000)).toFixed(0)} req/s, agent ${(cpu / n).toFixed(1)} µs/req, client ${((selfUse.user + selfUse.system) / n).toFixed(1)} µs/req (load ${la})`);
    if (callgrindOut) {
      // Dumps are <file>.<dump>-<thread>; thread 01 is the main thread (JavaScript), the others V8's compiler and GC helpers.
      await new Promise((ok) => setTimeout(ok, 500));
      const total = async (glob: string) => {
        const r = await run("sh", ["-c", `cat ${glob} 2>/dev/null | grep -E '^totals:' | awk '{s+=$2} END {print s+0}'`]);
        return Number(r.stdout.trim());
      };
      const idleMain = await total(`${callgrindOut}.1-01`);
      const idleAll = await total(`${callgrindOut}.1-*`);
      const main = await total(`${callgrindOut}.2-01`);
      const all = await total(`${callgrindOut}.2-*`);
      const perReq = (load: number, idle: number) => ((load - (idle * ms) / idleMs) / n).toFixed(0);
      console.log(`${mode}${q} callgrind: main thread ${perReq(main, idleMain)} Ir/req, all threads ${perReq(all, idleAll)} Ir/req (idle subtracted: main ${(idleMain / idleMs).toFixed(0)} Ir/ms over ${(idleMs / 1000).toFixed(1)} s; load ${(ms / 1000).toFixed(1)} s; raw main ${(main / n).toFixed(0)} Ir/req)`);
    }
  } finally {
    lean.destroy();
    // SIGTERM lets a profiled agent (PROBE_NODE_FLAGS="--cpu-prof …") write its profile.
    if (nodeFlags.length > 0) {
      await proc.kill("SIGTERM");
    } else {
      await proc.kill("SIGKILL");
    }
    dir.remove();
  }
}

await main();
process.exit(0);
