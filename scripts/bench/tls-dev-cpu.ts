// CPU per PUT of a -dev agent (whole process, all threads, from /proc) and
// of the lean client, over HTTP and over HTTPS to the same agent, in
// interleaved slices at 64 connections (issue #20; not a test, not part of
// the build). Beside tls-callgrind.ts's instruction counts, it shows how
// much of the TLS rise is time per instruction. THRASH=n starts n
// co-runners that increment random words of a THRASH_MB (16) MiB array, to
// see whether the HTTPS rise grows when the caches are shared.
//
//   npm run build
//   CAIRN_E2E_BIN=$PWD/dist/cairn flock /tmp/bench.lock node --import tsx scripts/bench/tls-dev-cpu.ts   # ROUNDS=3 SECS=4 THRASH=0
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cairn, cairnBin, freePort, tempDir } from "../e2e/harness.ts";
import { LeanAgent } from "./_lean_http.ts";

const conns = 64;
const secs = Number(process.env.SECS ?? 4);
const rounds = Number(process.env.ROUNDS ?? 3);
const thrashers = Number(process.env.THRASH ?? 0);
const thrashMb = Number(process.env.THRASH_MB ?? 16);
const value = Buffer.alloc(64, "v");

/** User + system CPU of a process, µs. */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10000;
}

/** PUTs at `conns` connections for `ms`; how many were answered. */
async function load(agent: LeanAgent, ms: number): Promise<number> {
  let i = 0;
  let done = 0;
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: conns }, async () => {
    while (performance.now() < end) {
      i++;
      const r = await agent.call("PUT", `/v1/kv/bench/k${i % 1000}`, {}, value);
      if (r.status !== 200) throw new Error(`PUT answered ${r.status}`);
      done++;
    }
  }));
  return done;
}

const dir = tempDir("tls-dev-cpu-");
const coRunners: ChildProcess[] = [];
let agentProc: ChildProcess | undefined;
try {
  for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server"]]) {
    const r = await cairn(args, { cwd: dir.path, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(r.stderr);
  }
  const [http, https, serfLan, serfWan, server] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const config = join(dir.path, "agent.hcl");
  writeFileSync(config, `ports { http = ${http} https = ${https} dns = -1 grpc = -1 serf_lan = ${serfLan} serf_wan = ${serfWan} server = ${server} }
tls { defaults { ca_file = "${dir.path}/consul-agent-ca.pem" cert_file = "${dir.path}/dc1-server-consul-0.pem" key_file = "${dir.path}/dc1-server-consul-0-key.pem" verify_incoming = false } }
`);
  const proc = spawn(cairnBin, ["agent", "-dev", `-config-file=${config}`, "-log-level=warn"], { stdio: "ignore" });
  agentProc = proc;
  for (let t = 0; ; t++) {
    const up = await fetch(`http://127.0.0.1:${http}/v1/status/leader`).then((r) => r.text(), () => "");
    if (up.includes("127.0.0.1")) break;
    if (t > 60) throw new Error("the agent did not elect itself within 30 s");
    await new Promise((r) => setTimeout(r, 500));
  }
  const words = thrashMb * 262144;
  for (let k = 0; k < thrashers; k++) {
    coRunners.push(spawn(process.execPath, ["-e", `const b = new Uint32Array(${words}); let x = 1; for (;;) { x = (x * 1103515245 + 12345) >>> 0; b[x % b.length]++; }`], { stdio: "ignore" }));
  }
  const agents = {
    http: new LeanAgent({ host: "127.0.0.1", port: http }, conns),
    https: new LeanAgent({ host: "127.0.0.1", port: https, ca: readFileSync(join(dir.path, "consul-agent-ca.pem")), servername: "localhost" }, conns),
  };
  await agents.http.open();
  await agents.https.open();
  await load(agents.http, 3000);
  await load(agents.https, 3000);
  console.log(`# ${cairnBin} -dev, ${conns} connections, ${rounds} rounds of ${secs} s per mode, ${thrashers} co-runners over ${thrashMb} MiB each`);
  for (let r = 0; r < rounds; r++) {
    for (const mode of (r % 2 ? ["https", "http"] : ["http", "https"]) as Array<"http" | "https">) {
      const s0 = cpuUs(proc.pid!);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const done = await load(agents[mode], secs * 1000);
      const elapsed = (performance.now() - t0) / 1000;
      const s1 = cpuUs(proc.pid!);
      const c = process.cpuUsage(c0);
      console.log(`${mode.padEnd(5)} ${(done / elapsed).toFixed(0).padStart(6)} ops/s  agent ${((s1 - s0) / done).toFixed(1)} µs/PUT  client ${((c.user + c.system) / done).toFixed(1)} µs/PUT`);
    }
  }
  agents.http.destroy();
  agents.https.destroy();
} finally {
  for (const c of coRunners) c.kill("SIGKILL");
  const a = agentProc;
  if (a && a.exitCode === null && a.signalCode === null) {
    const exited = new Promise((r) => a.once("exit", r));
    a.kill("SIGTERM");
    await exited;
  }
  dir.remove();
}
