// `cairn sync` end to end: a dev agent, a sync daemon with the exec driver
// whose module is a shell script recording each run's stdin, and the
// catalog changed under it (register, critical, deregister, check output only).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { until } from "../../core/testing/until.ts";
import { cairn, freePort, startCairn, startDevAgent, tempDir } from "./harness.ts";
import type { Agent, Proc } from "./harness.ts";

let agent: Agent;
let dir: { path: string; remove(): void };
let sync: Proc;
let api: string;
let hook: Server;
const hooked: { task: string; status: string; trigger: string }[] = [];

const MODULE = `#!/bin/sh
# Records each run: its stdin (the rendered inputs) under runs/<task>/<run id>.json.
d="$(dirname "$0")"
if [ "$CTS_ACTION" = inspect ]; then cat > /dev/null; echo "plan for $CTS_TASK_NAME"; exit 0; fi
mkdir -p "$d/runs/$CTS_TASK_NAME"
cat > "$d/runs/$CTS_TASK_NAME/$CTS_RUN_ID.json.tmp"
if [ -f "$d/slow-$CTS_TASK_NAME" ]; then touch "$d/running-$CTS_TASK_NAME"; sleep 2; rm -f "$d/running-$CTS_TASK_NAME"; fi
mv "$d/runs/$CTS_TASK_NAME/$CTS_RUN_ID.json.tmp" "$d/runs/$CTS_TASK_NAME/$CTS_RUN_ID.json"
echo "applied $CTS_TASK_NAME"
`;

interface RunInput {
  task: string;
  action: string;
  trigger: string;
  services?: Record<string, { id: string; address: string; port: number; status: string; tags: string[]; node_datacenter: string }>;
  consul_kv?: Record<string, string>;
}

function runsOf(task: string): RunInput[] {
  const d = join(dir.path, "runs", task);
  if (!existsSync(d)) return [];
  return readdirSync(d)
    .filter((n) => n.endsWith(".json"))
    .sort()
    .map((n) => JSON.parse(readFileSync(join(d, n), "utf8")) as RunInput);
}

async function put(path: string, body?: unknown): Promise<void> {
  const r = await fetch(`${agent.http}${path}`, { method: "PUT", ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  assert.equal(r.status, 200, `${path}: ${await r.text()}`);
}

function register(id: string, port: number) {
  return put("/v1/agent/service/register", { ID: id, Name: "web", Port: port, Address: "10.1.0.1", Tags: ["v1"], Check: { CheckID: `chk-${id}`, TTL: "10m", Status: "passing" } });
}

before(async () => {
  agent = await startDevAgent();
  const hookPort = await freePort();
  hook = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/hook") hooked.push(JSON.parse(body) as { task: string; status: string; trigger: string });
      res.end("ok");
    });
  });
  await new Promise<void>((r) => hook.listen(hookPort, "127.0.0.1", r));
  const apiPort = await freePort();
  api = `http://127.0.0.1:${apiPort}`;
  dir = tempDir("cairn-sync-e2e-");
  writeFileSync(join(dir.path, "module.sh"), MODULE);
  chmodSync(join(dir.path, "module.sh"), 0o755);
  writeFileSync(
    join(dir.path, "sync.hcl"),
    `
log_level = "debug"
port = ${apiPort}
webhook = "http://127.0.0.1:${hookPort}/hook"
buffer_period {
  min = "200ms"
  max = "1s"
}
consul {
  address = "${agent.httpAddr}"
}
driver "exec" {}
task {
  name = "web-task"
  module = "./module.sh"
  condition "services" {
    names = ["web"]
  }
}
task {
  name = "cron-task"
  module = "./module.sh"
  condition "schedule" {
    cron = "*/2 * * * * * *"
  }
  module_input "services" {
    names = ["web"]
  }
}
task {
  name = "kv-task"
  module = "./module.sh"
  condition "consul-kv" {
    path = "lb/"
    recurse = true
  }
}
`,
  );
  sync = startCairn(["sync", "start", "-bind", "127.0.0.1", "-config-file", join(dir.path, "sync.hcl")]);
});

after(async () => {
  await sync?.kill("SIGKILL");
  await agent?.stop();
  dir?.remove();
  hook?.close();
});

function waitRuns(task: string, n: number, what: string): Promise<RunInput[]> {
  return until(() => {
    const r = runsOf(task);
    return r.length >= n ? r : undefined;
  }, `${what} (runs of ${task} ≥ ${n})`, { timeoutMs: 30_000, failOn: sync.exited.then(() => { throw new Error(`sync exited:\n${sync.output()}`); }) });
}

test("sync e2e: register, check output only, critical, deregister; a change during a run runs again", async () => {
  // Start: web has no instances yet; the task runs once with an empty map.
  const [first] = await waitRuns("web-task", 1, "the start run");
  assert.equal(first!.trigger, "start");
  assert.deepEqual(first!.services, {});

  await register("web-1", 8080);
  const [, second] = await waitRuns("web-task", 2, "a run for the registration");
  assert.equal(second!.trigger, "change");
  const key = Object.keys(second!.services!)[0]!;
  assert.match(key, /^web-1\.[^.]+\.dc1$/);
  assert.equal(second!.services![key]!.port, 8080);
  assert.equal(second!.services![key]!.status, "passing");

  // Only the check's output changes: the agent's index moves, the render does not.
  await put("/v1/agent/check/pass/chk-web-1?note=all+good+at+t1");
  await put("/v1/agent/check/pass/chk-web-1?note=all+good+at+t2");
  await new Promise((r) => setTimeout(r, 1_500)); // > max buffer period: a run would have started
  assert.equal(runsOf("web-task").length, 2, "check output alone never runs a task");

  // Critical: healthy instances only, so web-1 leaves the map.
  await put("/v1/agent/check/fail/chk-web-1?note=down");
  const runs3 = await waitRuns("web-task", 3, "a run for critical");
  assert.deepEqual(runs3[2]!.services, {});

  // A change during a run: the slow module is still running when web-2 registers.
  // The slow switch is per task: the cron task runs the same module every 2 s, and a
  // slow cron run seen as web-task's would let web-2 register before web-task's run.
  writeFileSync(join(dir.path, "slow-web-task"), "");
  await put("/v1/agent/check/pass/chk-web-1");
  await until(() => existsSync(join(dir.path, "running-web-task")), "the slow run to start", { timeoutMs: 10_000 });
  await register("web-2", 8081);
  rmSync(join(dir.path, "slow-web-task"));
  const runs5 = await waitRuns("web-task", 5, "the second run after the slow one");
  assert.deepEqual(Object.keys(runs5[3]!.services!).map((k) => k.split(".")[0]), ["web-1"]);
  assert.deepEqual(Object.keys(runs5[4]!.services!).map((k) => k.split(".")[0]).sort(), ["web-1", "web-2"]);

  // Deregister.
  await put("/v1/agent/service/deregister/web-1");
  const runs6 = await waitRuns("web-task", 6, "a run for the deregistration");
  assert.deepEqual(Object.keys(runs6[5]!.services!).map((k) => k.split(".")[0]), ["web-2"]);

  // Run records in KV, newest last, with what changed. The last one is finished once the
  // driver has returned, a moment after the module wrote its run file.
  type RunRecord = { status: string; trigger: string; exitCode: number; outputTail: string; changedInputs: string[] };
  const recs = await until(async () => {
    const kv = (await (await fetch(`${agent.http}/v1/kv/consul-terraform-sync/runs/web-task/?recurse`)).json()) as { Value: string }[];
    const r = kv.map((p) => JSON.parse(Buffer.from(p.Value, "base64").toString())) as RunRecord[];
    return r.length >= 6 && r.at(-1)!.status !== "running" ? r : undefined;
  }, "the last run record to be finished", { timeoutMs: 15_000 });
  assert.ok(recs.length >= 6, `records: ${recs.length}`);
  const last = recs.at(-1)!;
  assert.equal(last.status, "successful");
  assert.equal(last.exitCode, 0);
  assert.match(last.outputTail, /applied web-task/);
  assert.deepEqual(last.changedInputs, ["health /v1/health/service/web?passing=1"]);
});

test("sync e2e: a consul-kv task renders consul_kv and runs on a change", async () => {
  const [first] = await waitRuns("kv-task", 1, "the kv start run");
  assert.deepEqual(first!.consul_kv, {});
  await fetch(`${agent.http}/v1/kv/lb/weight`, { method: "PUT", body: "10" });
  const runs = await waitRuns("kv-task", 2, "a kv change run");
  assert.deepEqual(runs.at(-1)!.consul_kv, { "lb/weight": "10" });
});

test("sync e2e: -once runs every task once and exits 0", async () => {
  const onceDir = join(dir.path, "once");
  mkdirSync(onceDir);
  writeFileSync(join(onceDir, "module.sh"), MODULE);
  chmodSync(join(onceDir, "module.sh"), 0o755);
  writeFileSync(
    join(onceDir, "sync.json"),
    JSON.stringify({
      consul: { address: agent.httpAddr, kv_path: "once-sync/" },
      driver: { exec: {} },
      task: [{ name: "once-task", module: "./module.sh", condition: { services: { names: ["web"] } } }],
    }),
  );
  const r = await cairn(["sync", "-once", "-config-file", join(onceDir, "sync.json")], { timeoutMs: 20_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(readdirSync(join(onceDir, "runs", "once-task")).filter((n) => n.endsWith(".json")).length, 1);
});

test("sync e2e: a bad config is refused with file and line", async () => {
  const f = join(dir.path, "bad.hcl");
  writeFileSync(f, 'task {\n  name = "x"\n  module = "m"\n  condition "services" { names = ["web"] }\n  colour = "red"\n}\n');
  const r = await cairn(["sync", "start", "-config-file", f]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /bad\.hcl:5: Unknown key "colour" in task "x"/);
});

async function apiJson(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${api}${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: r.status, json: await r.json() };
}

test("sync e2e: the API on its port, and the task CLI (disable, enable, create, PUT, delete -destroy, list)", async () => {
  await until(async () => (await fetch(`${api}/v1/health`)).ok, "the sync API");
  assert.deepEqual((await apiJson("GET", "/v1/health")).json, {});
  const st = await apiJson("GET", "/v1/status");
  assert.equal(st.json.task_summary.enabled.true, 3);
  const tasks = await apiJson("GET", "/v1/status/tasks?include=events");
  assert.equal(tasks.json["web-task"].status, "successful");
  assert.deepEqual(tasks.json["web-task"].services, ["web"]);
  assert.equal(tasks.json["web-task"].events[0].success, true);
  assert.equal((await apiJson("GET", "/v1/status/tasks/nope")).status, 404);
  assert.deepEqual(Object.keys((await apiJson("GET", "/v1/status/tasks?status=errored")).json), []);
  assert.equal((await apiJson("GET", "/v1/tasks/web-task")).json.task.condition.services.names[0], "web");
  const env = { CAIRN_SYNC_HTTP_ADDR: api };

  // Disabled: its watcher stays, a change does not run it; enabling runs it once with the latest data.
  const before = runsOf("web-task").length;
  let r = await cairn(["sync", "task", "disable", "web-task"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal((await apiJson("GET", "/v1/tasks/web-task")).json.task.enabled, false);
  await register("web-3", 8083);
  await new Promise((res) => setTimeout(res, 1_500));
  assert.equal(runsOf("web-task").length, before, "a disabled task never runs");
  r = await cairn(["sync", "task", "enable", "web-task"], { env });
  assert.equal(r.code, 0, r.stderr);
  const afterEnable = await waitRuns("web-task", before + 1, "the run on enable");
  assert.equal(afterEnable.at(-1)!.trigger, "enable");
  assert.ok(Object.keys(afterEnable.at(-1)!.services!).some((k) => k.startsWith("web-3.")));

  // Create from an HCL task file.
  const tf = join(dir.path, "created.hcl");
  writeFileSync(tf, 'task {\n  name = "created"\n  module = "./module.sh"\n  condition "services" {\n    names = ["web"]\n  }\n}\n');
  r = await cairn(["sync", "task", "create", "-task-file", tf], { env });
  assert.equal(r.code, 0, r.stderr);
  await waitRuns("created", 1, "the created task's first run");
  const bad = join(dir.path, "bad-task.hcl");
  writeFileSync(bad, 'task {\n  name = "b"\n  module = "./module.sh"\n  condition "services" {\n    names = ["web"]\n    colour = 1\n  }\n}\n');
  r = await cairn(["sync", "task", "create", "-task-file", bad], { env });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Unknown key "colour"/);

  // Inspect a task that does not exist yet: its plan, and nothing created.
  const draft = await apiJson("POST", "/v1/tasks?run=inspect", { task: { name: "draft", module: "./module.sh", condition: { services: { names: ["web"] } } } });
  assert.equal(draft.status, 200, JSON.stringify(draft.json));
  assert.match(draft.json.run.plan, /plan for draft/);
  assert.equal((await apiJson("GET", "/v1/tasks/draft")).status, 404);

  // PUT the whole task: new user meta, so a new render and a run carrying it.
  const put1 = await apiJson("PUT", "/v1/tasks/created", { task: { name: "created", module: "./module.sh", buffer_period: { enabled: false }, condition: { services: { names: ["web"], cts_user_defined_meta: { owner: "ops" } } } } });
  assert.equal(put1.status, 200, JSON.stringify(put1.json));
  const created = await waitRuns("created", 2, "a run after PUT");
  const anyService = Object.values(created.at(-1)!.services!)[0] as unknown as { cts_user_defined_meta: Record<string, string> };
  assert.deepEqual(anyService.cts_user_defined_meta, { owner: "ops" });

  // List.
  r = await cairn(["sync", "task", "list"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^created\s+true\s+successful\s+web$/m);

  // Delete with destroy: the module runs with CTS_ACTION=destroy, then the task is gone.
  r = await cairn(["sync", "task", "delete", "-destroy", "created"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(runsOf("created").at(-1)!.action, "destroy");
  assert.equal((await apiJson("GET", "/v1/tasks/created")).status, 404);
  r = await cairn(["sync", "task", "delete", "created"], { env });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /does not exist/);
});

test("sync e2e: -inspect-task shows the driver's plan and applies nothing", async () => {
  const before = runsOf("web-task").length;
  const r = await cairn(["sync", "start", "-inspect-task", "web-task", "-config-file", join(dir.path, "sync.hcl")], { timeoutMs: 20_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /==> Task "web-task"\nplan for web-task/);
  assert.equal(runsOf("web-task").length, before);
});

test("sync e2e: a schedule task runs on its cron times with its module inputs; the webhook hears each run", async () => {
  const runs = await waitRuns("cron-task", 2, "two scheduled runs (every 2 s)");
  assert.deepEqual(runs.slice(0, 2).map((r) => r.trigger), ["schedule", "schedule"]);
  assert.ok(runs[1]!.services !== undefined, "the services module input is rendered");
  await until(() => hooked.some((h) => h.task === "web-task" && h.status === "successful"), "a webhook POST for web-task", { timeoutMs: 5_000 });
  assert.ok(hooked.some((h) => h.task === "cron-task" && h.trigger === "schedule"));
});

test("sync e2e: services by regexp follow services as they appear and go", async () => {
  const created = await apiJson("POST", "/v1/tasks", { task: { name: "rx", module: "./module.sh", buffer_period: { enabled: false }, condition: { services: { regexp: "^api-" } } } });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const [first] = await waitRuns("rx", 1, "the regexp task's start run");
  assert.deepEqual(first!.services, {});
  await put("/v1/agent/service/register", { ID: "api-a-1", Name: "api-a", Port: 9001 });
  await put("/v1/agent/service/register", { ID: "api-b-1", Name: "api-b", Port: 9002 });
  await put("/v1/agent/service/register", { ID: "other-1", Name: "other", Port: 9003 });
  const runs = await until(() => {
    const r = runsOf("rx");
    const last = r.at(-1);
    return last && Object.keys(last.services!).length === 2 ? r : undefined;
  }, "both api-* services in the regexp task", { timeoutMs: 15_000 });
  assert.deepEqual(Object.keys(runs.at(-1)!.services!).map((k) => k.split(".")[0]).sort(), ["api-a-1", "api-b-1"]);
  await put("/v1/agent/service/deregister/api-a-1");
  await until(() => {
    const last = runsOf("rx").at(-1);
    return last && Object.keys(last.services!).length === 1 ? last : undefined;
  }, "api-a gone from the regexp task", { timeoutMs: 15_000 });
  assert.equal((await apiJson("DELETE", "/v1/tasks/rx")).status, 202);
});
