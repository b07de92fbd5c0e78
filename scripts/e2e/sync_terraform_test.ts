// `cairn sync` with the terraform driver, against scripts/e2e/fake_terraform.cjs
// (Terraform's CLI verbs and files, and its consul backend's lock, CAS and
// chunking from the documented protocol) and a real dev agent holding the state.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { until } from "../../core/testing/until.ts";
import { freePort, root, run, startCairn, startDevAgent, tempDir } from "./harness.ts";
import type { Agent, Proc } from "./harness.ts";

let agent: Agent;
let dir: { path: string; remove(): void };
let sync: Proc;
let api: string;
let tf: string;
let tfLog: string;

const STATE_KEY = "consul-terraform-sync/terraform-env:web";
// The fake locks with Terraform's flags (0x2ddccbc058a50c18, consul api.LockFlagValue)
// and reads them back digit for digit, as the real consul backend does.

interface Invocation {
  args: string[];
  event?: string;
  cwd: string;
}

function invocations(): Invocation[] {
  if (!existsSync(tfLog)) return [];
  return readFileSync(tfLog, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Invocation);
}

async function kvRaw(key: string): Promise<{ Value: string; Session?: string } | undefined> {
  const r = await fetch(`${agent.http}/v1/kv/${key}`);
  if (r.status === 404) return undefined;
  return ((await r.json()) as { Value: string; Session?: string }[])[0];
}

/** The state as Terraform's consul backend stores it (link + chunks, gzip). */
async function state(): Promise<{ serial: number; resources: { name: string }[]; chunked: boolean } | undefined> {
  const e = await kvRaw(STATE_KEY);
  if (!e) return undefined;
  let payload = Buffer.from(e.Value, "base64");
  let chunked = false;
  if (payload[0] === 0x7b) {
    const link = JSON.parse(payload.toString()) as { "current-hash"?: string; chunks?: string[] };
    if (link["current-hash"]) {
      chunked = true;
      const parts: Buffer[] = [];
      for (const c of link.chunks!) parts.push(Buffer.from((await kvRaw(c))!.Value, "base64"));
      payload = Buffer.concat(parts);
    }
  }
  const { gunzipSync } = await import("node:zlib");
  if (payload[0] === 0x1f) payload = gunzipSync(payload);
  return { ...(JSON.parse(payload.toString()) as { serial: number; resources: { name: string }[] }), chunked };
}

async function put(path: string, body?: unknown): Promise<void> {
  const r = await fetch(`${agent.http}${path}`, { method: "PUT", ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  assert.equal(r.status, 200, `${path}: ${await r.text()}`);
}

function register(id: string, port: number) {
  return put("/v1/agent/service/register", { ID: id, Name: "web", Port: port, Address: "10.2.0.1" });
}

async function resourcesAre(names: string[], what: string) {
  return until(async () => {
    const s = await state();
    const got = (s?.resources ?? []).map((r) => r.name.split(".")[0]).sort();
    return JSON.stringify(got) === JSON.stringify([...names].sort()) ? s : undefined;
  }, what, { timeoutMs: 20_000, failOn: sync.exited.then(() => { throw new Error(`sync exited:\n${sync.output()}`); }) });
}

before(async () => {
  agent = await startDevAgent();
  dir = tempDir("cairn-sync-tf-");
  mkdirSync(join(dir.path, "bin"));
  tf = join(dir.path, "bin", "terraform");
  copyFileSync(join(root, "scripts/e2e/fake_terraform.cjs"), tf);
  chmodSync(tf, 0o755);
  tfLog = join(dir.path, "tf.log");
  mkdirSync(join(dir.path, "modules", "web"), { recursive: true });
  writeFileSync(join(dir.path, "modules", "web", "main.tf"), 'variable "services" {}\n');
  const port = await freePort();
  api = `http://127.0.0.1:${port}`;
  writeFileSync(
    join(dir.path, "sync.hcl"),
    `
port = ${port}
working_dir = "${join(dir.path, "work")}"
buffer_period {
  min = "200ms"
  max = "1s"
}
consul {
  address = "${agent.httpAddr}"
}
driver "terraform" {
  path = "${join(dir.path, "bin")}"
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
terraform_provider "local" {
  secret_key = "s3cr3t-provider-value"
}
task {
  name = "web"
  module = "./modules/web"
  providers = ["local"]
  condition "services" {
    names = ["web"]
  }
}
`,
  );
  sync = startCairn(["sync", "start", "-bind", "127.0.0.1", "-config-file", join(dir.path, "sync.hcl")], {
    env: { FAKE_TERRAFORM_LOG: tfLog, FAKE_TERRAFORM_APPLY_MS: "1200" },
  });
});

after(async () => {
  await sync?.kill("SIGKILL");
  await agent?.stop();
  dir?.remove();
});

test("sync terraform: generated root module, workspace per task, init → validate → apply, state in KV", async () => {
  await register("web-1", 8080);
  const s = await resourcesAre(["web-1"], "web-1 applied through terraform");
  assert.equal(s!.chunked, false);
  const wd = join(dir.path, "work", "web");
  const tfvars = readFileSync(join(wd, "terraform.tfvars"), "utf8");
  assert.match(tfvars, /^services = \{\n {2}"web-1\.[^"]+\.dc1" = \{\n {4}id +=/m);
  assert.match(tfvars, /port += 8080/);
  assert.match(readFileSync(join(wd, "main.tf"), "utf8"), /backend "consul" \{[\s\S]*path += "consul-terraform-sync\/terraform"/);
  assert.match(readFileSync(join(wd, "main.tf"), "utf8"), /source += "\.\.\/\.\.\/modules\/web"/);
  assert.equal(statSync(join(wd, "providers.tf")).mode & 0o777, 0o600, "provider secrets are 0600");
  const verbs = invocations().filter((i) => !i.event).map((i) => i.args.slice(0, 2).join(" "));
  const firstApply = verbs.indexOf("apply -auto-approve");
  assert.deepEqual(verbs.slice(0, firstApply + 1).filter((v) => !v.startsWith("version")), ["init -input=false", "workspace select", "workspace new", "validate -no-color", "apply -auto-approve"]);
  // Events through the API: the secret never shows.
  // The state is written before terraform exits: wait for the run record to end.
  const st = await until(async () => {
    const j = (await (await fetch(`${api}/v1/status/tasks/web?include=events`)).json()) as Record<string, { events: { success: boolean; end_time: string | null; output_tail: string }[] }>;
    return j.web!.events[0]!.end_time !== null ? j : undefined;
  }, "the run record to end");
  assert.equal(st.web!.events[0]!.success, true, JSON.stringify(st.web!.events, null, 1));
  assert.equal(await kvRaw("consul-terraform-sync/terraform-env:web/.lockinfo"), undefined, "lock info removed after the run");
  const lock = await kvRaw("consul-terraform-sync/terraform-env:web/.lock");
  assert.ok(lock === undefined || lock.Session === undefined, "lock released");
  assert.doesNotMatch(JSON.stringify(st), /s3cr3t-provider-value/);
});

test("sync terraform: the consul backend lock holds off a second apply; chunked state round-trips", async () => {
  const wd = join(dir.path, "work", "web");
  const before = invocations().length;
  await register("web-2", 8081);
  // Wait until sync's apply holds the lock, then try a second apply on the same state.
  await until(() => invocations().slice(before).some((i) => i.event === "locked"), "sync's apply to take the lock", { timeoutMs: 10_000 });
  const second = await run(tf, ["apply", "-auto-approve", "-input=false", "-lock-timeout=0s"], { cwd: wd, env: { FAKE_TERRAFORM_LOG: tfLog } });
  assert.equal(second.code, 1, second.stdout + second.stderr);
  assert.match(second.stderr, /Error acquiring the state lock/);
  assert.match(second.stderr, /Info: +consul session: [0-9a-f-]{36}/);
  assert.match(second.stderr, /Operation: OperationTypeApply/);
  await resourcesAre(["web-1", "web-2"], "sync's apply to finish");

  // A big state (> 512 KiB after gzip) goes to chunks; the next sync run reads it and cleans up.
  const big = await run(tf, ["apply", "-auto-approve", "-input=false", "-lock-timeout=10s"], { cwd: wd, env: { FAKE_TERRAFORM_PAD_BYTES: "1500000" } });
  assert.equal(big.code, 0, big.stderr);
  const s1 = await state();
  assert.equal(s1!.chunked, true);
  const link = JSON.parse(Buffer.from((await kvRaw(STATE_KEY))!.Value, "base64").toString()) as { "current-hash": string; chunks: string[] };
  assert.ok(link.chunks.length >= 2, `chunks: ${link.chunks.length}`);
  await register("web-3", 8082);
  const s2 = await resourcesAre(["web-1", "web-2", "web-3"], "sync's apply over a chunked state");
  assert.equal(s2!.serial, s1!.serial + 1);
  assert.equal(await kvRaw(link.chunks[0]!), undefined, "old chunks deleted after the CAS");
});

test("sync terraform: inspect (plan) and delete with destroy", async () => {
  const r = await fetch(`${api}/v1/tasks/web?run=inspect`, { method: "PATCH", body: "{}" });
  const body = (await r.json()) as { inspect: { changes_present: boolean; plan: string } };
  assert.equal(r.status, 200, JSON.stringify(body));
  assert.equal(body.inspect.changes_present, false);
  assert.match(body.inspect.plan, /No changes/);
  const d = await fetch(`${api}/v1/tasks/web?destroy=true`, { method: "DELETE" });
  assert.equal(d.status, 202, await d.text());
  const s = await state();
  assert.deepEqual(s!.resources, []);
  assert.equal((await fetch(`${api}/v1/tasks/web`)).status, 404);
});
