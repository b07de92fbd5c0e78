// `cairn sync` high availability: two instances of one cluster, a leader
// elected with a session lock; the follower redirects its API; the leader
// is killed with SIGKILL during a run and the other takes over, runs every
// task once and finishes the work the dead leader never applied.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { until } from "../../core/testing/until.ts";
import { freePort, startCairn, startDevAgent, tempDir } from "./harness.ts";
import type { Agent, Proc } from "./harness.ts";

let agent: Agent;
let dir: { path: string; remove(): void };
const procs: Proc[] = [];

const MODULE = `#!/bin/sh
d="$(dirname "$0")"
mkdir -p "$d/runs"
cat > "$d/runs/$CTS_RUN_ID-$SYNC_INSTANCE.tmp"
if [ -f "$d/slow" ]; then touch "$d/running-$SYNC_INSTANCE"; sleep 3; fi
mv "$d/runs/$CTS_RUN_ID-$SYNC_INSTANCE.tmp" "$d/runs/$CTS_RUN_ID-$SYNC_INSTANCE.json"
`;

interface Run {
  instance: string;
  trigger: string;
  services: Record<string, unknown>;
}

function runs(): Run[] {
  const d = join(dir.path, "runs");
  if (!existsSync(d)) return [];
  return readdirSync(d)
    .filter((n) => n.endsWith(".json"))
    .sort()
    .map((n) => ({ instance: n.replace(/^.*-(\w+)\.json$/, "$1"), ...(JSON.parse(readFileSync(join(d, n), "utf8")) as { trigger: string; services: Record<string, unknown> }) }));
}

async function startInstance(name: string, port: number): Promise<Proc> {
  const cfg = join(dir.path, `sync-${name}.hcl`);
  writeFileSync(
    cfg,
    `
port = ${port}
buffer_period {
  min = "200ms"
  max = "1s"
}
consul {
  address = "${agent.httpAddr}"
}
high_availability {
  cluster {
    name = "edge"
    leader_election {
      ttl = "10s"
    }
  }
}
driver "exec" {}
task {
  name = "web-task"
  module = "./module.sh"
  condition "services" {
    names = ["web"]
  }
}
`,
  );
  const p = startCairn(["sync", "start", "-bind", "127.0.0.1", "-config-file", cfg], { env: { SYNC_INSTANCE: name } });
  procs.push(p);
  await until(async () => (await fetch(`http://127.0.0.1:${port}/v1/health`)).ok, `sync instance ${name}`, { timeoutMs: 10_000 });
  return p;
}

before(async () => {
  agent = await startDevAgent();
  dir = tempDir("cairn-sync-ha-");
  writeFileSync(join(dir.path, "module.sh"), MODULE);
  chmodSync(join(dir.path, "module.sh"), 0o755);
});

after(async () => {
  for (const p of procs) await p.kill("SIGKILL");
  await agent?.stop();
  dir?.remove();
});

test("sync HA: one leader runs, the follower redirects; SIGKILL the leader mid-run and the other finishes the work", async () => {
  const portA = await freePort();
  const portB = await freePort();
  const a = await startInstance("a", portA);
  // A is alone: it is elected and runs the task once.
  await until(() => runs().some((r) => r.instance === "a"), "a's first run", { timeoutMs: 15_000 });
  await startInstance("b", portB);
  const redirect = await until(async () => {
    const r = await fetch(`http://127.0.0.1:${portB}/v1/status/tasks`, { redirect: "manual" });
    return r.status === 307 ? r : undefined;
  }, "b to redirect to the leader", { timeoutMs: 10_000 });
  assert.equal(redirect.headers.get("location"), `http://127.0.0.1:${portA}/v1/status/tasks`);
  assert.equal((await fetch(`http://127.0.0.1:${portA}/v1/status/tasks`)).status, 200);

  // A slow run on the leader, killed in the middle.
  writeFileSync(join(dir.path, "slow"), "");
  const reg = await fetch(`${agent.http}/v1/agent/service/register`, { method: "PUT", body: JSON.stringify({ ID: "web-1", Name: "web", Port: 8080 }) });
  assert.equal(reg.status, 200);
  await until(() => existsSync(join(dir.path, "running-a")), "a's slow run to start", { timeoutMs: 10_000 });
  await a.kill("SIGKILL");
  rmSync(join(dir.path, "slow"));
  assert.ok(runs().every((r) => r.instance === "a"), "only the leader ran");

  // B takes the lock once A's session expires (TTL 10s, the servers wait 2×), runs every task once.
  const taken = await until(() => runs().find((r) => r.instance === "b"), "b to take over and run", { timeoutMs: 40_000, intervalMs: 200 });
  assert.equal(taken.trigger, "failover");
  assert.deepEqual(Object.keys(taken.services).map((k) => k.split(".")[0]), ["web-1"]);
  const st = (await (await fetch(`http://127.0.0.1:${portB}/v1/status/tasks/web-task?include=events`)).json()) as Record<string, { events: { status: string; error: { message: string } | null }[] }>;
  assert.equal(st["web-task"]!.events.some((e) => e.status === "errored" && /stopped during the run/.test(e.error?.message ?? "")), true, "a's unfinished run is recorded as interrupted");
});
