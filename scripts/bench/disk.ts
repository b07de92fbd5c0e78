// What a 3-server cluster keeps on disk and in memory for a given catalog and
// KV (issue #24's sizing guide): starts three `cairn agent -server` (fsync
// on), registers BENCH_NODES (1,000) nodes with BENCH_PER_NODE (10) service
// instances each (each with a passing check) through the leader's
// /v1/catalog/register, then writes BENCH_KV_MIB (256) MiB of KV as 256 KiB
// random values, and prints after each step each server's data dir size
// (Raft log + snapshots + the rest, `du` of its files) and RSS, with the
// load. Usage: node --import tsx scripts/bench/disk.ts (CAIRN_E2E_BIN or dist/cairn).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Agent } from "node:http";
import { httpCall } from "./_http.ts";
import { makeCluster, waitForLeader } from "../e2e/harness.ts";
import { load } from "./_proc.ts";

const nodes = Number(process.env.BENCH_NODES ?? 1_000);
const perNode = Number(process.env.BENCH_PER_NODE ?? 10);
const kvMiB = Number(process.env.BENCH_KV_MIB ?? 256);
const conns = 16;

function duMiB(dir: string): number {
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) bytes += statSync(p).blocks * 512;
    }
  };
  walk(dir);
  return bytes / 2 ** 20;
}

function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
}

/**
 * A PUT, again after a pause while the cluster has no leader (a loaded machine
 * can lose one); both PUTs here are idempotent, so an unknown outcome is retried too.
 */
async function put(target: { host: string; port: number }, agent: Agent, path: string, body: string | Buffer): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const r = await httpCall(target, agent, "PUT", path, body);
    if (r.status === 200) return;
    if (attempt >= 30 || r.status < 500) throw new Error(`PUT ${path}: ${r.status} ${r.body.toString()}`);
    await new Promise((ok) => setTimeout(ok, 1_000));
  }
}

async function pool(total: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: conns }, async () => {
    while (next < total) await fn(next++);
  }));
}

const c = await makeCluster(3, { prefix: "cairn-bench-disk-" });
try {
  for (const s of c.servers) c.start(s);
  const leader = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
  const target = { host: leader.addr, port: leader.http };
  const agent = new Agent({ keepAlive: true, maxSockets: conns });
  const report = (what: string): void => {
    console.log(`  ${what}: data dir ${c.servers.map((s) => duMiB(s.dir).toFixed(1)).join(" / ")} MiB, ` +
      `RSS ${c.servers.map((s) => rssMiB(s.proc!.pid).toFixed(0)).join(" / ")} MiB (leader ${leader.name}); ${load()}`);
  };
  console.log(`disk: 3 servers; ${nodes} nodes × ${perNode} instances, then ${kvMiB} MiB of KV; ${load()}`);
  report("empty");

  let t = performance.now();
  await pool(nodes * perNode, async (i) => {
    const node = Math.floor(i / perNode);
    const k = i % perNode;
    const id = `svc-${k}-${node}`;
    await put(target, agent, "/v1/catalog/register", JSON.stringify({
      Node: `node-${node}`, Address: `10.${(node >> 16) & 255}.${(node >> 8) & 255}.${node & 255}`,
      Service: { ID: id, Service: `svc-${(node * perNode + k) % Math.max(1, Math.floor((nodes * perNode) / 100))}`, Port: 8000 + k, Tags: ["bench"] },
      Checks: [{ CheckID: `chk-${id}`, Name: `check ${id}`, ServiceID: id, Status: "passing" }],
    }));
  });
  console.log(`  ${nodes * perNode} instances registered in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  report(`${nodes} nodes, ${nodes * perNode} instances`);

  const valueBytes = 256 * 1024;
  const values = Math.round((kvMiB * 2 ** 20) / valueBytes);
  t = performance.now();
  await pool(values, async (i) => {
    await put(target, agent, `/v1/kv/bench/${i}`, randomBytes(valueBytes));
  });
  console.log(`  ${kvMiB} MiB of KV written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  report(`and ${kvMiB} MiB of KV`);
  agent.destroy();
} finally {
  await c.stopAll();
  c.root.remove();
}
