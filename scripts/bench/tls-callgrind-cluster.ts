// Instructions per PUT on each server of a three-server cluster, plain
// against TLS, counted by callgrind (issue #20; not a test, not part of the
// build). tls-callgrind.ts counts a -dev agent, which has no followers and
// no server RPC; the cluster leader's rise with TLS in perf (V8's share
// above all) was four times the -dev agent's, so this counts the cluster
// itself. Per mode, three servers each under `valgrind --tool=callgrind`
// (raft_multiplier 5 and handshake timeouts of 10 minutes, so that
// valgrind's slowness costs no elections or connections),
// the lean client puts WARMUP PUTs to the leader at 64 connections, every
// server's counters are zeroed (callgrind_control -z), N PUTs follow, and
// the counters are dumped (-d). Modes: plain, and TLS as in kv-cluster.ts
// --tls (mutual TLS on server RPC, HTTPS for the load).
//
//   npm run build
//   node --import tsx scripts/bench/tls-callgrind-cluster.ts     # N=3000 WARMUP=2000
//
// Needs valgrind; the certificates come from `cairn tls`.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { cairn, cairnBin, freePort, makeCluster, tempDir, waitForLeader } from "../e2e/harness.ts";
import { LeanAgent } from "./_lean_http.ts";
import { conns, perPut, putLoad, watchedTls } from "./_callgrind.ts";

const n = Number(process.env.N ?? 3000);
const warmup = Number(process.env.WARMUP ?? 2000);
const watched = [...watchedTls, "Heap::CollectGarbage", "ScavengerCollector::CollectGarbage"];

async function measure(dir: string, mode: "plain" | "tls"): Promise<void> {
  const out = join(dir, `cg-${mode}`);
  execFileSync("mkdir", ["-p", out]);
  const wrapper = join(dir, "valgrind-cairn.sh");
  writeFileSync(wrapper, `#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file="$CGOUT/cg.%p" "${cairnBin}" "$@"\n`);
  chmodSync(wrapper, 0o755);
  const httpsPort = await freePort();
  const tls = mode === "tls"
    ? {
      ports: { https: httpsPort },
      tls: {
        defaults: { ca_file: join(dir, "consul-agent-ca.pem"), cert_file: join(dir, "dc1-server-consul-0.pem"), key_file: join(dir, "dc1-server-consul-0-key.pem"), verify_incoming: true, verify_outgoing: true },
        internal_rpc: { verify_server_hostname: true },
        https: { verify_incoming: false },
      },
    }
    : {};
  const cluster = await makeCluster(3, { prefix: `cg-${mode}-`, bin: wrapper, env: { CGOUT: out }, address: (i) => `127.0.1.${i + 1}`, config: { performance: { raft_multiplier: 5 }, limits: { https_handshake_timeout: "600s", rpc_handshake_timeout: "600s" }, ...tls } });
  try {
    for (const s of cluster.servers) cluster.start(s);
    const leader = await waitForLeader(cluster, cluster.servers, { timeoutMs: 600_000 });
    const agent = new LeanAgent(mode === "tls"
      ? { host: leader.addr, port: httpsPort, ca: readFileSync(join(dir, "consul-agent-ca.pem")) }
      : { host: leader.addr, port: leader.http }, conns);
    await agent.open();
    await putLoad(agent, warmup);
    const pids = cluster.servers.map((s) => s.proc!.pid);
    for (const p of pids) execFileSync("callgrind_control", ["-z", String(p)], { stdio: "ignore" });
    const t0 = performance.now();
    await putLoad(agent, n);
    const secs = (performance.now() - t0) / 1000;
    for (const p of pids) execFileSync("callgrind_control", ["-d", String(p)], { stdio: "ignore" });
    agent.destroy();
    console.log(`${mode}: ${n} PUTs in ${secs.toFixed(1)} s under valgrind (${(n / secs).toFixed(0)}/s)`);
    for (const s of cluster.servers) {
      const pid = s.proc!.pid;
      const dump = readdirSync(out).find((f) => f === `cg.${pid}.1`);
      if (!dump) throw new Error(`no callgrind dump for ${s.name} (${pid})`);
      console.log(`  ${s === leader ? "leader  " : "follower"} ${s.name} pid ${pid} (${join(out, dump)}) per PUT: ${perPut(join(out, dump), n, watched)}`);
    }
  } finally {
    await cluster.stopAll();
    if (!process.env.KEEP) cluster.root.remove();
  }
}

const dir = tempDir("tls-callgrind-cluster-");
try {
  for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server", "-additional-ipaddress=127.0.1.1", "-additional-ipaddress=127.0.1.2", "-additional-ipaddress=127.0.1.3"]]) {
    const r = await cairn(args, { cwd: dir.path, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(r.stderr);
  }
  console.log(`# ${cairnBin}, three servers under callgrind, ${warmup} PUTs of warm-up then ${n} counted, ${conns} connections; dumps in ${dir.path}`);
  for (const mode of (process.env.MODES ?? "plain,tls").split(",") as Array<"plain" | "tls">) await measure(dir.path, mode);
} finally {
  if (!process.env.KEEP) dir.remove();
}
