// Cluster KV benchmark (not a test): `node --import tsx scripts/bench/kv-cluster.ts`.
// Three cairn servers (dist/cairn, or CAIRN_E2E_BIN; fsync on, as always)
// and a three-member etcd (/usr/bin/etcd, its JSON gateway) side by side on
// 127.0.0.1 free ports, in the same run. Each phase alternates between the
// two in CAIRN_BENCH_ROUNDS (default 3) slices, cairn first, then etcd
// first, and so on: a shared machine's load changes by the second, and it
// should fall on both alike. Load goes to the leader over
// keep-alive HTTP: PUT at 1, 16 and 64 connections, then GET at 16
// connections in each consistency mode (cairn: default, ?consistent, ?stale;
// etcd: linearizable and serializable range). Prints both and the ratios,
// with each phase's CPU time of the three servers per operation (user +
// system, from /proc): on a shared machine latency moves with its load, and
// CPU per operation shows the work each system does all the same.
// CAIRN_BENCH_SECONDS (default 3) sets each phase's length. Each target first
// takes CAIRN_BENCH_WARMUP_SECONDS (default 1) of uncounted PUTs at 16
// connections, so the first measured phase does not time a cold JIT (ours)
// or a cold page cache and freshly elected cluster (both).
//
// `--tls` (issue #20): certificates from `cairn tls`; a second cairn cluster
// with mutual TLS on server RPC (verify_incoming, verify_outgoing,
// verify_server_hostname) and HTTPS for the load, and etcd with TLS on client
// and peer URLs (peers mutually authenticated). Compared in the same run:
// cairn+TLS / cairn plain and cairn+TLS / etcd+TLS.
//
// The load goes through scripts/bench/_lean_http.ts, a keep-alive HTTP/1.1
// client much cheaper than node:http's Agent (which, over TLS, spent more CPU
// per request than the servers it measured, on the same two cores);
// `--node-client` uses node:http(s)'s Agent as before 2026-11-25. Each phase
// also prints the load generator's own CPU per operation. The lean client
// opens all of a phase's connections (TLS handshakes included) before the
// phase's clock starts, and prints what that cost; before 2026-11-29 they
// were opened, and paid for, in the first slice.
//
// `--acl` (issue #21): a second cairn cluster with ACLs on (default deny),
// 100 policies, and the load's token allowed by a key_prefix rule of one of
// them (it links all 100). Compared in the same run: cairn+acl / cairn.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { loadavg } from "node:os";
import { join } from "node:path";
import { cairn as cairnCli, freePort, makeCluster, startProcess, tempDir, waitFor, waitForLeader, type Cluster, type Proc } from "../e2e/harness.ts";
import { type LoadResult, type Op, slice, Tally } from "./_load.ts";
import { LeanAgent } from "./_lean_http.ts";

const withTls = process.argv.includes("--tls");
const withAcl = process.argv.includes("--acl");
const withNodeClient = process.argv.includes("--node-client");

const seconds = Number(process.env.CAIRN_BENCH_SECONDS ?? 3);
const warmupSeconds = Number(process.env.CAIRN_BENCH_WARMUP_SECONDS ?? 1);
const rounds = Math.max(1, Math.floor(Number(process.env.CAIRN_BENCH_ROUNDS ?? 3)));
const keyCount = 1_000;
const value = Buffer.alloc(64, "v");

interface Reply {
  status: number;
  body: Buffer;
}

interface HttpTarget {
  host: string;
  port: number;
  /** HTTPS, trusting this CA. */
  ca?: Buffer;
  /** X-Consul-Token on every request. */
  token?: string;
}

function httpCall(agent: Agent, target: HttpTarget, method: string, path: string, body?: Buffer): Promise<Reply> {
  return new Promise((ok, fail) => {
    const headers: Record<string, string | number> = body ? { "content-length": body.length } : {};
    if (target.token) headers["x-consul-token"] = target.token;
    const options = { host: target.host, port: target.port, method, path, agent, headers };
    const onResponse = (res: import("node:http").IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on("error", fail);
    };
    const req = target.ca
      ? httpsRequest({ ...options, ca: target.ca, agent: agent as unknown as HttpsAgent }, onResponse)
      : request(options, onResponse);
    req.on("error", fail);
    req.end(body);
  });
}

/** How the load reaches one server: one request at a time per connection, up to the phase's connections. */
interface Client {
  call(method: string, path: string, body?: Buffer): Promise<Reply>;
  /** Opens every connection the phase will use before its clock starts (the lean client; node's Agent opens them as it goes). */
  open?(): Promise<void>;
  destroy(): void;
}

/** node:http(s)'s keep-alive Agent (`--node-client`). */
class NodeClient implements Client {
  readonly #agent: Agent;
  constructor(readonly target: HttpTarget, conns: number) {
    this.#agent = target.ca ? (new HttpsAgent({ keepAlive: true, maxSockets: conns }) as unknown as Agent) : new Agent({ keepAlive: true, maxSockets: conns });
  }
  call(method: string, path: string, body?: Buffer): Promise<Reply> {
    return httpCall(this.#agent, this.target, method, path, body);
  }
  destroy(): void {
    this.#agent.destroy();
  }
}

/** The lean client (default): the same requests at a fraction of the client's CPU, over TCP or TLS (the server's certificate checked against `ca`). */
class LeanClient implements Client {
  readonly #lean: LeanAgent;
  readonly #headers: Record<string, string>;
  constructor(target: HttpTarget, conns: number) {
    this.#lean = new LeanAgent({ host: target.host, port: target.port, ...(target.ca ? { ca: target.ca } : {}) }, conns);
    this.#headers = target.token ? { "X-Consul-Token": target.token } : {};
  }
  call(method: string, path: string, body?: Buffer): Promise<Reply> {
    return this.#lean.call(method, path, this.#headers, body);
  }
  open(): Promise<void> {
    return this.#lean.open();
  }
  destroy(): void {
    this.#lean.destroy();
  }
}

function makeClient(target: HttpTarget, conns: number): Client {
  return withNodeClient ? new NodeClient(target, conns) : new LeanClient(target, conns);
}

interface Result extends LoadResult {
  /** CPU time (user + system) of all three servers per operation, microseconds. */
  serverCpuUsPerOp: number;
  /** CPU time of this process (the load generator) per operation, microseconds. */
  clientCpuUsPerOp: number;
}

/** CPU time used so far by these processes (user + system), microseconds, from /proc. */
function cpuMicros(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch { /* gone, or not Linux */ }
  }
  return (ticks * 1_000_000) / 100; // USER_HZ
}

/** A phase's figures with the servers' and the load generator's CPU time over its slices. */
class CpuTally extends Tally<Client> {
  cpuMicros = 0;
  clientCpuMicros = 0;
  constructor(conns: number, target: HttpTarget) {
    super(conns, makeClient(target, conns));
  }

  override result(): Result {
    const n = this.latencies.length;
    return { ...super.result(), serverCpuUsPerOp: n > 0 ? this.cpuMicros / n : NaN, clientCpuUsPerOp: n > 0 ? this.clientCpuMicros / n : NaN };
  }
}

/** A slice of load (`slice`) with the CPU time of `pids`, the servers', and of this process. */
async function cpuSlice(tally: CpuTally, op: Op<Client>, pids: number[], secs: number): Promise<void> {
  const cpu0 = cpuMicros(pids);
  const own0 = process.cpuUsage();
  await slice(tally, op, secs);
  tally.cpuMicros += cpuMicros(pids) - cpu0;
  const own = process.cpuUsage(own0);
  tally.clientCpuMicros += own.user + own.system;
}

interface Target {
  name: string;
  /** Where the load goes. */
  http: HttpTarget;
  /** The server processes, for their CPU time. */
  pids: number[];
  put: Op<Client>;
  gets: Array<{ mode: string; get: Op<Client> }>;
}

function cairnTarget(t: HttpTarget, pids: number[], name = "cairn"): Target {
  const get = (q: string): Op<Client> => async (client, i) => (await client.call("GET", `/v1/kv/bench/k${i % keyCount}${q}`)).status === 200;
  return {
    name,
    http: t,
    pids,
    put: async (client, i) => (await client.call("PUT", `/v1/kv/bench/k${i % keyCount}`, value)).status === 200,
    gets: [
      { mode: "default", get: get("") },
      { mode: "consistent", get: get("?consistent") },
      { mode: "stale", get: get("?stale") },
    ],
  };
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

function etcdTarget(t: HttpTarget, pids: number[], name = "etcd"): Target {
  const range = (serializable: boolean): Op<Client> => async (client, i) => {
    const body = Buffer.from(JSON.stringify({ key: b64(`bench/k${i % keyCount}`), serializable }));
    return (await client.call("POST", "/v3/kv/range", body)).status === 200;
  };
  return {
    name,
    http: t,
    pids,
    put: async (client, i) => {
      const body = Buffer.from(JSON.stringify({ key: b64(`bench/k${i % keyCount}`), value: b64(value) }));
      return (await client.call("POST", "/v3/kv/put", body)).status === 200;
    },
    gets: [
      { mode: "default", get: range(false) },
      { mode: "consistent", get: range(false) },
      { mode: "stale", get: range(true) },
    ],
  };
}

/**
 * One phase for every target, in `rounds` slices each, alternating which
 * target goes first (ABBA), so that a shared machine's changing load falls
 * on all of them alike instead of on whichever ran later.
 */
async function interleaved(label: string, conns: number, targets: Target[], op: (t: Target) => Op<Client>): Promise<Result[]> {
  const tallies = targets.map((t) => new CpuTally(conns, t.http));
  // Connections (and their TLS handshakes) are made before the timed slices:
  // a phase measures keep-alive throughput. What opening them cost is printed.
  const opened: Array<{ servers: number; client: number }> = [];
  for (const [k, t] of targets.entries()) {
    const cpu0 = cpuMicros(t.pids);
    const own0 = process.cpuUsage();
    await tallies[k]!.agent.open?.();
    const own = process.cpuUsage(own0);
    opened.push({ servers: cpuMicros(t.pids) - cpu0, client: own.user + own.system });
  }
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? targets.map((_, k) => k) : targets.map((_, k) => targets.length - 1 - k);
    for (const k of order) await cpuSlice(tallies[k]!, op(targets[k]!), targets[k]!.pids, seconds / rounds);
  }
  const results = tallies.map((t) => t.result());
  targets.forEach((t, k) => console.log(`  ${t.name.padEnd(9)} ${label} ${fmt(results[k]!)}${withNodeClient ? "" : `  (opening ${conns} conns: servers ${(opened[k]!.servers / 1000).toFixed(0)} ms, client ${(opened[k]!.client / 1000).toFixed(0)} ms CPU)`}`));
  return results;
}

async function runAll(targets: Target[]): Promise<Array<Map<string, Result>>> {
  const out = targets.map(() => new Map<string, Result>());
  if (warmupSeconds > 0) {
    for (const t of targets) {
      const warm = new CpuTally(16, t.http);
      await cpuSlice(warm, t.put, t.pids, warmupSeconds);
      warm.agent.destroy();
    }
  }
  const record = (key: string, results: Result[]) => results.forEach((r, k) => out[k]!.set(key, r));
  for (const conns of [1, 16, 64]) {
    record(`PUT c=${conns}`, await interleaved(`PUT        c=${String(conns).padEnd(3)}`, conns, targets, (t) => t.put));
  }
  for (let g = 0; g < targets[0]!.gets.length; g++) {
    const mode = targets[0]!.gets[g]!.mode;
    record(`GET ${mode} c=16`, await interleaved(`GET ${mode.padEnd(10)} c=16`, 16, targets, (t) => t.gets[g]!.get));
  }
  return out;
}

function fmt(r: Result): string {
  return `${r.opsPerSec.toFixed(0).padStart(7)} ops/s  p50 ${r.p50Ms.toFixed(2).padStart(6)} ms  p99 ${r.p99Ms.toFixed(2).padStart(7)} ms  servers' CPU ${r.serverCpuUsPerOp.toFixed(0).padStart(5)} us/op  client CPU ${r.clientCpuUsPerOp.toFixed(0).padStart(4)} us/op  errors ${r.errors}`;
}

interface Etcd {
  procs: Proc[];
  leaderPort: number;
  dir: { path: string; remove(): void };
}

interface Certs {
  ca: string;
  cert: string;
  key: string;
}

async function startEtcd(certs?: Certs): Promise<Etcd> {
  const dir = tempDir("cairn-bench-etcd-");
  const members: Array<{ name: string; client: number; peer: number }> = [];
  for (let i = 1; i <= 3; i++) members.push({ name: `e${i}`, client: await freePort(), peer: await freePort() });
  const scheme = certs ? "https" : "http";
  const initial = members.map((m) => `${m.name}=${scheme}://127.0.0.1:${m.peer}`).join(",");
  const tls = certs
    ? [
        // No --trusted-ca-file for clients: with it etcd 3.4 demands a client certificate (cairn's HTTPS here does not).
        "--cert-file", certs.cert, "--key-file", certs.key,
        "--peer-cert-file", certs.cert, "--peer-key-file", certs.key, "--peer-trusted-ca-file", certs.ca, "--peer-client-cert-auth",
      ]
    : [];
  const procs = members.map((m) => startProcess("/usr/bin/etcd", [
    "--name", m.name,
    "--data-dir", join(dir.path, m.name),
    "--listen-client-urls", `${scheme}://127.0.0.1:${m.client}`,
    "--advertise-client-urls", `${scheme}://127.0.0.1:${m.client}`,
    "--listen-peer-urls", `${scheme}://127.0.0.1:${m.peer}`,
    "--initial-advertise-peer-urls", `${scheme}://127.0.0.1:${m.peer}`,
    "--initial-cluster", initial,
    "--initial-cluster-state", "new",
    "--initial-cluster-token", "cairn-bench",
    "--log-level", "error",
    ...tls,
  ], { stdio: "ignore" }));
  const ca = certs ? readFileSync(certs.ca) : undefined;
  const probe = new Agent({ keepAlive: false });
  /** The client port of the member that says it is the leader. */
  const leaderPort = async (): Promise<number | undefined> => {
    for (const m of members) {
      try {
        const r = await httpCall(ca ? new HttpsAgent({ keepAlive: false }) as unknown as Agent : probe, { host: "127.0.0.1", port: m.client, ...(ca ? { ca } : {}) }, "POST", "/v3/maintenance/status", Buffer.from("{}"));
        if (r.status !== 200) continue;
        const s = JSON.parse(r.body.toString()) as { header?: { member_id?: string }; leader?: string };
        if (s.leader && s.leader !== "0" && s.header?.member_id === s.leader) return m.client;
      } catch { /* not up yet */ }
    }
    return undefined;
  };
  const port = await waitFor(leaderPort, { timeoutMs: 30_000, intervalMs: 100, what: "a leader in the etcd cluster" }).catch(async (err: unknown) => {
    for (const p of procs) await p.kill();
    throw err;
  });
  return { procs, leaderPort: port, dir };
}

/** A CA and one server certificate (server.dc1.consul, localhost, 127.0.0.1) from the build's own `tls` commands. */
async function makeCerts(dir: string): Promise<Certs> {
  mkdirSync(dir, { recursive: true });
  for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server", "-additional-ipaddress=127.0.1.1", "-additional-ipaddress=127.0.1.2", "-additional-ipaddress=127.0.1.3"]]) {
    const r = await cairnCli(args, { cwd: dir, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(`cairn ${args.join(" ")}: ${r.stdout}${r.stderr}`);
  }
  return { ca: join(dir, "consul-agent-ca.pem"), cert: join(dir, "dc1-server-consul-0.pem"), key: join(dir, "dc1-server-consul-0-key.pem") };
}

function ratios(label: string, a: Map<string, Result>, b: Map<string, Result>): void {
  console.log(`\n# ratios ${label} (ops/s higher is better; p50, p99 and CPU per operation lower is better)`);
  for (const [k, c] of a) {
    const e = b.get(k);
    if (!e) continue;
    console.log(`  ${k.padEnd(22)} ops/s ${(c.opsPerSec / e.opsPerSec).toFixed(2).padStart(5)}x   p50 ${(c.p50Ms / e.p50Ms).toFixed(2).padStart(5)}x   p99 ${(c.p99Ms / e.p99Ms).toFixed(2).padStart(5)}x   servers' CPU/op ${(c.serverCpuUsPerOp / e.serverCpuUsPerOp).toFixed(2).padStart(5)}x   client CPU/op ${(c.clientCpuUsPerOp / e.clientCpuUsPerOp).toFixed(2).padStart(5)}x`);
  }
}

/** One target's verdict line: the ops/s ratio of phase `key` against `min`. */
function verdict(label: string, key: string, a: Map<string, Result>, b: Map<string, Result>, min: number): void {
  const r = a.get(key)!.opsPerSec / b.get(key)!.opsPerSec;
  console.log(`  ${label.padEnd(24)} ${key}  ${r.toFixed(2)}x  (target >= ${min.toFixed(2)}x: ${r >= min ? "met" : "NOT met"})`);
}

/**
 * 100 policies (99 on other prefixes, services and nodes; one with
 * key_prefix "bench/" write) and a token linking all of them, made with
 * the management token once the leader has stored it.
 */
async function aclToken(t: HttpTarget, management: string): Promise<string> {
  const agent = new Agent({ keepAlive: true });
  const as = { ...t, token: management };
  try {
    await waitFor(async () => (await httpCall(agent, as, "GET", "/v1/acl/token/self")).status === 200, { timeoutMs: 30_000, what: "the initial management token" });
    const policies: { Name: string }[] = [];
    for (let i = 0; i < 100; i++) {
      const rules = i === 42 ? 'key_prefix "bench/" { policy = "write" }' : `key_prefix "other-${i}/" { policy = "write" }\nservice "svc-${i}" { policy = "read" }\nnode_prefix "n${i}-" { policy = "read" }`;
      const r = await httpCall(agent, as, "PUT", "/v1/acl/policy", Buffer.from(JSON.stringify({ Name: `p${i}`, Rules: rules })));
      if (r.status !== 200) throw new Error(`policy p${i}: ${r.status} ${r.body.toString()}`);
      policies.push({ Name: `p${i}` });
    }
    const r = await httpCall(agent, as, "PUT", "/v1/acl/token", Buffer.from(JSON.stringify({ Description: "bench load", Policies: policies })));
    if (r.status !== 200) throw new Error(`token: ${r.status} ${r.body.toString()}`);
    return (JSON.parse(r.body.toString()) as { SecretID: string }).SecretID;
  } finally {
    agent.destroy();
  }
}

async function main(): Promise<void> {
  let cluster: Cluster | undefined;
  let tlsCluster: Cluster | undefined;
  let etcd: Etcd | undefined;
  let certDir: { path: string; remove(): void } | undefined;
  try {
    console.log(`# KV cluster benchmark: 3 servers on 127.0.0.1, fsync on, ${seconds}s per phase after ${warmupSeconds}s of warm-up, load sent to the leader${withTls ? "; --tls: plain cairn, cairn with TLS and etcd with TLS" : ""}${withAcl ? "; --acl: cairn, and cairn with ACLs (default deny, 100 policies, the load's token allowed by a key_prefix rule)" : ""}`);
    console.log(`# the clusters run side by side; each phase alternates between them in ${rounds} slices of ${(seconds / rounds).toFixed(2)}s`);
    console.log(`# load average at start: ${loadavg().map((x) => x.toFixed(2)).join(" ")} (the machine may be shared)`);
    if (!withAcl && !existsSync("/usr/bin/etcd")) throw new Error("/usr/bin/etcd is missing (Debian etcd-server)");
    cluster = await makeCluster(3, { prefix: "cairn-bench-cluster-" });
    for (const s of cluster.servers) cluster.start(s);
    const leader = await waitForLeader(cluster, cluster.servers, { timeoutMs: 60_000 });
    const plain = cairnTarget({ host: leader.addr, port: leader.http }, cluster.servers.map((x) => x.proc?.pid ?? -1));
    if (withAcl) {
      const management = "5e5a1a3c-0000-4000-8000-000000000001";
      tlsCluster = await makeCluster(3, {
        prefix: "cairn-bench-acl-",
        config: { performance: { raft_multiplier: 1 }, acl: { enabled: true, default_policy: "deny", tokens: { initial_management: management } } },
      });
      for (const s of tlsCluster.servers) tlsCluster.start(s);
      const aclLeader = await waitForLeader(tlsCluster, tlsCluster.servers, { timeoutMs: 60_000 });
      const token = await aclToken({ host: aclLeader.addr, port: aclLeader.http }, management);
      const [cairn, cairnAcl] = await runAll([
        plain,
        cairnTarget({ host: aclLeader.addr, port: aclLeader.http, token }, tlsCluster.servers.map((x) => x.proc?.pid ?? -1), "cairn+acl"),
      ]) as [Map<string, Result>, Map<string, Result>];
      console.log(`# load average at end: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
      ratios("cairn+acl / cairn (target ≥ 0.9 ops/s)", cairnAcl, cairn);
      return;
    }
    if (!withTls) {
      etcd = await startEtcd();
      const [cairn, etcdResults] = await runAll([plain, etcdTarget({ host: "127.0.0.1", port: etcd.leaderPort }, etcd.procs.map((p) => p.pid))]) as [Map<string, Result>, Map<string, Result>];
      console.log(`# load average at end: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
      console.log("  (etcd GET default and consistent are both linearizable ranges; stale = serializable)");
      ratios("cairn / etcd", cairn, etcdResults);
      return;
    }
    certDir = tempDir("cairn-bench-certs-");
    const certs = await makeCerts(certDir.path);
    const httpsPort = await freePort();
    tlsCluster = await makeCluster(3, {
      prefix: "cairn-bench-tls-",
      address: (i) => `127.0.1.${i + 1}`,
      config: {
        performance: { raft_multiplier: 1 },
        ports: { https: httpsPort },
        tls: {
          defaults: { ca_file: certs.ca, cert_file: certs.cert, key_file: certs.key, verify_incoming: true, verify_outgoing: true },
          internal_rpc: { verify_server_hostname: true },
          https: { verify_incoming: false },
        },
      },
    });
    for (const s of tlsCluster.servers) tlsCluster.start(s);
    const tlsLeader = await waitForLeader(tlsCluster, tlsCluster.servers, { timeoutMs: 60_000 });
    etcd = await startEtcd(certs);
    const ca = readFileSync(certs.ca);
    const [cairn, cairnTls, etcdTls] = await runAll([
      plain,
      cairnTarget({ host: tlsLeader.addr, port: httpsPort, ca }, tlsCluster.servers.map((x) => x.proc?.pid ?? -1), "cairn+tls"),
      etcdTarget({ host: "127.0.0.1", port: etcd.leaderPort, ca }, etcd.procs.map((p) => p.pid), "etcd+tls"),
    ]) as [Map<string, Result>, Map<string, Result>, Map<string, Result>];
    console.log(`# load average at end: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
    ratios("cairn+tls / cairn (target ≥ 0.8 ops/s)", cairnTls, cairn);
    ratios("cairn+tls / etcd+tls (target ≥ 1.5 ops/s at 64 connections)", cairnTls, etcdTls);
    console.log(`\n# issue #20 targets (ops/s ratios measured in this run; load average now ${loadavg().map((x) => x.toFixed(2)).join(" ")})`);
    verdict("cairn+tls / cairn", "PUT c=64", cairnTls, cairn, 0.8);
    verdict("cairn+tls / etcd+tls", "PUT c=64", cairnTls, etcdTls, 1.5);
  } finally {
    await cluster?.stopAll();
    cluster?.root.remove();
    await tlsCluster?.stopAll();
    tlsCluster?.root.remove();
    for (const p of etcd?.procs ?? []) await p.kill();
    etcd?.dir.remove();
    certDir?.remove();
  }
}

await main();
