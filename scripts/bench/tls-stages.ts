// Where a PUT's time goes with and without TLS (issue #20; not a test, not
// part of the build). Needs a build with the stage counters of
// scripts/bench/tls-stages.patch (temporary instrumentation: the Raft driver,
// the RPC BatchWriter and the HTTP server count into core/_probe.ts, which
// writes them to /tmp/tlsx/p-<pid>.json four times a second):
//
//   git apply scripts/bench/tls-stages.patch
//   CAIRN_DIST_DIR=/tmp/dist-probe npm run build
//   git checkout core && rm core/_probe.ts
//   CAIRN_E2E_BIN=/tmp/dist-probe/cairn ROUNDS=4 SECS=3 node --import tsx scripts/bench/tls-stages.ts
//
// Two three-server clusters side by side, one plain and one with TLS
// (TLSMODE=both: mutual TLS on server RPC and HTTPS; rpc: RPC only; https:
// HTTPS only), PUT load at CONNS (64) connections opened before the clock,
// interleaved slices. Per slice: ops/s, each server's CPU, read/write
// syscalls and voluntary context switches per PUT, and the counters: Readies
// and entries per Ready, the leader's stages (pre = client write → request
// event, p2s = propose → AppendEntries sent, s2a = sent → applied, ackRtt =
// AppendEntries → its ack, http = request event → answer), RPC flushes and
// those that found a TLS write still pending ("behind"), and RPC reads
// (chunks) with frames per chunk. IDLE=10 first measures 10 s of idle CPU;
// RATE caps the load (ops/s); PROF=1 with a wrapper binary takes --cpu-prof.
import { readFileSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { cairn as cairnCli, freePort, makeCluster, tempDir, waitForLeader, type Cluster } from "../e2e/harness.ts";
import { slice, Tally } from "./_load.ts";
import { LeanAgent } from "./_lean_http.ts";

const secs = Number(process.env.SECS ?? 3);
const rounds = Number(process.env.ROUNDS ?? 2);
const conns = Number(process.env.CONNS ?? 64);
const value = Buffer.alloc(64, "v");
function stat(pid: number) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const x = f.slice(f.lastIndexOf(")") + 2).split(" ");
  const io = readFileSync(`/proc/${pid}/io`, "utf8");
  const g = (k: string) => Number(/^(\w+): (\d+)$/m.exec(io.split("\n").find((l) => l.startsWith(k + ":"))!)![2]);
  const st = readFileSync(`/proc/${pid}/status`, "utf8");
  const vol = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(st)![1]);
  return { cpu: (Number(x[11]) + Number(x[12])) * 10000, sys: Number(x[12]) * 10000, syscr: g("syscr"), syscw: g("syscw"), vol };
}
function pc(pid: number): Record<string, number> { try { return JSON.parse(readFileSync(`/tmp/tlsx/p-${pid}.json`, "utf8")); } catch { return {}; } }
function probeDump(name: string, role: string, d: Record<string, number>, n: number) {
  const r = (a: string, b: string) => (d[b] ? (d[a]! / d[b]!).toFixed(2) : "-");
  if (role === "L") console.log(`   ${name} L: readies/op ${((d.lReadies ?? 0) / n).toFixed(3)} syncReadies/op ${((d.lSyncReadies ?? 0) / n).toFixed(3)} ent/syncReady ${r("lReadyEntries", "lSyncReadies")} pre ${r("preMs", "preN")}ms p2s ${r("p2sMs", "timedN")}ms s2a ${r("s2aMs", "timedN")}ms ackRtt ${r("ackRttMs", "ackN")}ms http ${r("httpMs", "httpN")}ms finish ${r("httpFinishMs", "httpN")}ms flushes/op ${((d.flushes ?? 0) / n).toFixed(3)} behind ${d.flushBehind ?? 0} writeCb ${r("writeCbMs", "writeCbN")}ms srvChunks/op ${((d.srvChunks ?? 0) / n).toFixed(3)} frames/chunk ${r("srvFrames", "srvChunks")} B/chunk ${r("srvChunkBytes", "srvChunks")} appendMsgs/op ${((d.appendMsgs ?? 0) / n).toFixed(3)}`);
  else console.log(`   ${name} F: syncReadies/op ${((d.fSyncReadies ?? 0) / n).toFixed(3)} ent/syncReady ${r("fReadyEntries", "fSyncReadies")} recv2ack ${r("fRecv2AckMs", "fAckN")}ms appendRecv/op ${((d.fAppendRecv ?? 0) / n).toFixed(3)} flushes/op ${((d.flushes ?? 0) / n).toFixed(3)} behind ${d.flushBehind ?? 0} writeCb ${r("writeCbMs", "writeCbN")}ms srvChunks/op ${((d.srvChunks ?? 0) / n).toFixed(3)} frames/chunk ${r("srvFrames", "srvChunks")} B/chunk ${r("srvChunkBytes", "srvChunks")}`);
}
async function main() {
  mkdirSync("/tmp/tlsx", { recursive: true });
  const certDir = tempDir("probe-certs-");
  mkdirSync(certDir.path, { recursive: true });
  for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server", "-additional-ipaddress=127.0.1.1", "-additional-ipaddress=127.0.1.2", "-additional-ipaddress=127.0.1.3"]]) {
    const r = await cairnCli(args, { cwd: certDir.path, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(r.stderr);
  }
  const certs = { ca: join(certDir.path, "consul-agent-ca.pem"), cert: join(certDir.path, "dc1-server-consul-0.pem"), key: join(certDir.path, "dc1-server-consul-0-key.pem") };
  const clusters: Cluster[] = [];
  try {
    const prof = (n: string) => process.env.PROF ? { env: { PROFDIR: `/tmp/tlsx/prof/${n}` } } : {};
    const plain = await makeCluster(3, { prefix: "probe-plain-", ...prof("plain") }); clusters.push(plain);
    for (const s of plain.servers) plain.start(s);
    const httpsPort = await freePort();
    const tlsMode = process.env.TLSMODE ?? "both"; // both | rpc | https
    const tlsc = await makeCluster(3, { env: {},
      prefix: "probe-tls-", ...prof("tls"), address: (i) => `127.0.1.${i + 1}`,
      config: { performance: { raft_multiplier: 1 }, ports: { https: httpsPort },
        tls: { defaults: { ca_file: certs.ca, cert_file: certs.cert, key_file: certs.key, verify_incoming: tlsMode !== "https", verify_outgoing: tlsMode !== "https" },
          internal_rpc: { verify_server_hostname: tlsMode !== "https" }, https: { verify_incoming: false } } },
    }); clusters.push(tlsc);
    for (const s of tlsc.servers) tlsc.start(s);
    const l1 = await waitForLeader(plain, plain.servers, { timeoutMs: 60_000 });
    const l2 = await waitForLeader(tlsc, tlsc.servers, { timeoutMs: 60_000 });
    const ca = readFileSync(certs.ca);
    const useHttps = tlsMode !== "rpc";
    const targets = [
      { name: "plain", t: { host: l1.addr, port: l1.http }, pids: plain.servers.map((s) => s.proc!.pid), leader: plain.servers.find((s) => s.http === l1.http)!.proc!.pid },
      { name: "tls-" + tlsMode, t: useHttps ? { host: l2.addr, port: httpsPort, ca } : { host: l2.addr, port: l2.http }, pids: tlsc.servers.map((s) => s.proc!.pid), leader: tlsc.servers.find((s) => s.addr === l2.addr)!.proc!.pid },
    ];
    if (process.env.IDLE) {
      await new Promise((r) => setTimeout(r, 3000));
      const b = targets.map((tg) => tg.pids.map(stat)); const bp = targets.map((tg) => tg.pids.map(pc));
      await new Promise((r) => setTimeout(r, Number(process.env.IDLE) * 1000));
      const a = targets.map((tg) => tg.pids.map(stat)); const ap = targets.map((tg) => tg.pids.map(pc));
      targets.forEach((tg, k) => console.log(`idle ${tg.name}: ` + tg.pids.map((p, j) => `${p === tg.leader ? "L" : "F"} ${((a[k]![j]!.cpu - b[k]![j]!.cpu) / 1000 / Number(process.env.IDLE)).toFixed(1)}ms/s flushes ${((ap[k]![j]!.flushes ?? 0) - (bp[k]![j]!.flushes ?? 0))} chunks ${((ap[k]![j]!.srvChunks ?? 0) - (bp[k]![j]!.srvChunks ?? 0))}`).join("  ") + ` load ${loadavg()[0]!.toFixed(2)}`));
    }
    console.log("leaders", targets.map((t) => `${t.name}=${t.leader}`).join(" "));
    if (process.env.START_DELAY) await new Promise((r) => setTimeout(r, Number(process.env.START_DELAY) * 1000));
    console.log("load", loadavg().map((x) => x.toFixed(2)).join(" "));
    for (const tg of targets) { const tally = new Tally(16, new LeanAgent(tg.t, 16)); await slice(tally, (a, i) => a.call("PUT", `/v1/kv/bench/k${i % 1000}`, {}, value).then((r) => r.status === 200), 1); tally.result(); }
    for (let r = 0; r < rounds; r++) {
      for (const tg of (r % 2 ? [...targets].reverse() : targets)) {
        const lean = new LeanAgent(tg.t, conns); await lean.open();
        const before = tg.pids.map(stat);
        const pb = tg.pids.map(pc);
        const c0 = process.cpuUsage();
        const tally = new Tally(conns, lean);
        const rate = Number(process.env.RATE ?? 0);
        const tStart = performance.now();
        await slice(tally, async (a, i) => {
          if (rate > 0) { const due = tStart + (i * 1000) / rate; const w = due - performance.now(); if (w > 0) await new Promise((r) => setTimeout(r, w)); }
          return a.call("PUT", `/v1/kv/bench/k${i % 1000}`, { "X-T0": String(performance.timeOrigin + performance.now()) }, value).then((r) => r.status === 200);
        }, secs);
        const res = tally.result();
        const after = tg.pids.map(stat);
        const n = tally.latencies.length;
        const per = tg.pids.map((p, k) => `${p === tg.leader ? "L" : "F"}:${((after[k]!.cpu - before[k]!.cpu) / n).toFixed(0)}us (sys ${((after[k]!.sys - before[k]!.sys) / n).toFixed(0)}) r${((after[k]!.syscr - before[k]!.syscr) / n).toFixed(2)} w${((after[k]!.syscw - before[k]!.syscw) / n).toFixed(2)} cs${((after[k]!.vol - before[k]!.vol) / n).toFixed(2)}`).join("  ");
        const cu = process.cpuUsage(c0);
        await new Promise((r) => setTimeout(r, 400));
        const pa = tg.pids.map(pc);
        tg.pids.forEach((p, k) => { const d: Record<string, number> = {}; for (const key of Object.keys(pa[k]!)) d[key] = (pa[k]![key] ?? 0) - (pb[k]![key] ?? 0); probeDump(tg.name, p === tg.leader ? "L" : "F", d, n); });
        console.log(`${tg.name.padEnd(10)} ${res.opsPerSec.toFixed(0).padStart(6)} ops/s p50 ${res.p50Ms.toFixed(2)} p99 ${res.p99Ms.toFixed(2)} err ${res.errors} client ${((cu.user + cu.system) / n).toFixed(0)}us (sys ${(cu.system / n).toFixed(0)}) | ${per} | load ${loadavg()[0]!.toFixed(2)}`);
      }
    }
    if (process.env.HOLD) { console.log("holding", targets.map((t) => `${t.name} leader ${t.leader} pids ${t.pids}`)); await new Promise((r) => setTimeout(r, Number(process.env.HOLD) * 1000)); }
  } finally {
    if (process.env.PROF) { for (const c of clusters) for (const s of c.servers) await s.proc?.kill("SIGTERM"); await new Promise((r) => setTimeout(r, 4000)); }
    for (const c of clusters) { await c.stopAll(); c.root.remove(); }
    certDir.remove();
  }
}
await main();
