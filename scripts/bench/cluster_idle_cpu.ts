// What a 3-server cluster costs each server per second when no request
// comes (timers, gossip, Raft heartbeats, anti-entropy), with ACLs on
// (`acl`: the kv-cluster bench's config, no agent token, so anti-entropy and
// coordinate updates are refused) or off: whether a per-request gap in
// kv-cluster --acl is really a per-second one (issue #21). The servers
// settle for 20 s, then IDLE_S (15) s are measured from /proc.
//
//   CAIRN_E2E_BIN=dist/cairn node --import tsx scripts/bench/cluster_idle_cpu.ts acl|plain
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { makeCluster } from "../e2e/harness.ts";
const acl = process.argv[2] === "acl";
const secs = Number(process.env.IDLE_S ?? 15);
function cpu(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const x = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(x[11]) + Number(x[12])) * 10;
}
const c = await makeCluster(3, { prefix: "cairn-idle-", bin: process.env.CAIRN_E2E_BIN, config: acl ? { performance: { raft_multiplier: 1 }, acl: { enabled: true, default_policy: "deny", tokens: { initial_management: "5e5a1a3c-0000-4000-8000-000000000001" } } } : {} });
try {
  for (const s of c.servers) c.start(s);
  await new Promise((ok) => setTimeout(ok, 20_000));
  const pids = c.servers.map((s) => s.proc!.pid);
  const a = pids.map(cpu);
  await new Promise((ok) => setTimeout(ok, secs * 1000));
  const b = pids.map(cpu);
  console.log(`${acl ? "acl" : "plain"}: idle ms CPU/s per server: ${b.map((v, i) => ((v - a[i]!) / secs).toFixed(1)).join(" ")} (load ${loadavg().map((x) => x.toFixed(2)).join(" ")})`);
  for (const s of c.servers) {
    const lines = c.output(s).split("\n").filter((l) => /WARN|ERROR/.test(l));
    console.log(`  ${s.name}: ${lines.length} WARN/ERROR lines${lines.length > 0 ? `, last: ${lines.at(-1)!.slice(0, 200)}` : ""}`);
  }
} finally {
  await c.stopAll();
  c.root.remove();
}
process.exit(0);
