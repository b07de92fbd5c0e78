// Instructions per PUT of a -dev agent over HTTP and over HTTPS, counted by
// callgrind (issue #20; not a test, not part of the build). A count does not
// depend on the machine's load, unlike the CPU times of kv-cluster.ts. Per
// mode: the agent starts under `valgrind --tool=callgrind`, the lean client
// (the benchmarks' load generator) puts WARMUP PUTs at 64 connections, the
// counters are zeroed (callgrind_control -z), N PUTs follow, and the counters
// are dumped (-d). Printed per PUT: all threads, the main thread (uv_run),
// V8's optimizing compiler threads (warm-up left over, not per-request work)
// and the TLS functions.
//
//   npm run build
//   node --import tsx scripts/bench/tls-callgrind.ts          # N=3000 WARMUP=2000
//
// Needs valgrind; the certificates come from `cairn tls`.
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cairn, cairnBin, freePort, tempDir } from "../e2e/harness.ts";
import { LeanAgent } from "./_lean_http.ts";
import { conns, perPut, putLoad, watchedTls } from "./_callgrind.ts";

const n = Number(process.env.N ?? 3000);
const warmup = Number(process.env.WARMUP ?? 2000);
const watched = watchedTls;

async function measure(dir: string, mode: "http" | "https"): Promise<void> {
  const [http, https, serfLan, serfWan, server] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const config = join(dir, `agent-${mode}.hcl`);
  writeFileSync(config, `ports { http = ${http} https = ${https} dns = -1 grpc = -1 serf_lan = ${serfLan} serf_wan = ${serfWan} server = ${server} }
tls { defaults { ca_file = "${dir}/consul-agent-ca.pem" cert_file = "${dir}/dc1-server-consul-0.pem" key_file = "${dir}/dc1-server-consul-0-key.pem" verify_incoming = false } }
`);
  const out = join(dir, `cg.${mode}`);
  const proc = spawn("valgrind", ["--tool=callgrind", `--callgrind-out-file=${out}.%p`, cairnBin, "agent", "-dev", `-config-file=${config}`, "-log-level=warn"], { stdio: "ignore" });
  try {
    for (let t = 0; ; t++) {
      const up = await fetch(`http://127.0.0.1:${http}/v1/status/leader`).then((r) => r.text(), () => "");
      if (up.includes("127.0.0.1")) break;
      if (t > 240) throw new Error("the agent under valgrind did not elect itself within 240 s");
      await new Promise((r) => setTimeout(r, 1000));
    }
    const agent = new LeanAgent(mode === "https"
      ? { host: "127.0.0.1", port: https, ca: readFileSync(join(dir, "consul-agent-ca.pem")), servername: "localhost" }
      : { host: "127.0.0.1", port: http }, conns);
    await agent.open();
    await putLoad(agent, warmup);
    execFileSync("callgrind_control", ["-z", String(proc.pid)], { stdio: "ignore" });
    await putLoad(agent, n);
    execFileSync("callgrind_control", ["-d", String(proc.pid)], { stdio: "ignore" });
    agent.destroy();
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
  }
  const dump = readdirSync(dir).find((f) => f.startsWith(`cg.${mode}.`) && f.endsWith(".1"));
  if (!dump) throw new Error(`no callgrind dump for ${mode}`);
  console.log(`${mode.padEnd(5)} instructions per PUT: ${perPut(join(dir, dump), n, watched)}`);
}

const dir = tempDir("tls-callgrind-");
try {
  for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server"]]) {
    const r = await cairn(args, { cwd: dir.path, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(r.stderr);
  }
  console.log(`# ${cairnBin}, ${warmup} PUTs of warm-up then ${n} counted, ${conns} connections`);
  for (const mode of ["http", "https"] as const) await measure(dir.path, mode);
} finally {
  dir.remove();
}
