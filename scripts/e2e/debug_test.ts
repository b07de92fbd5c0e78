// End-to-end: `cairn debug` against the built binary. A -dev agent (which
// has enable_debug) with a gossip key and an ACL token in its config is
// watched for 3 s at 1 s intervals: the .tar.gz holds Consul's layout plus a
// V8 CPU profile and heap snapshot, and neither the key, nor the configured
// token, nor the token the command used appears anywhere in it (the heap
// snapshot included). A server without enable_debug refuses the profile
// endpoints (401) and debug captures the rest with a warning.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cairn, startAgent, startCairn, startDevAgent, tempDir, waitFor, type Agent } from "./harness.ts";

const dir = tempDir("cairn-e2e-debug-");
const key = "pUqJrVyVRj5jsiYEkM/tFQYfWyJxr3hbaD0E5ySyYeo=";
const configToken = "3f2e1d0c-aaaa-4bbb-8ccc-111122223333";
const cliToken = "9a8b7c6d-dddd-4eee-8fff-444455556666";
let dev: Agent;

before(async () => {
  const config = join(dir.path, "secrets.hcl");
  writeFileSync(config, `encrypt = "${key}"\nacl { tokens { agent = "${configToken}" } }\n`);
  dev = await startDevAgent([`-config-file=${config}`]);
});
after(async () => {
  await dev?.stop();
  dir.remove();
});

function filesUnder(root: string): string[] {
  return readdirSync(root).flatMap((n) => (statSync(join(root, n)).isDirectory() ? filesUnder(join(root, n)).map((f) => `${n}/${f}`) : [n]));
}

test("debug: a 3s capture of a -dev agent, archived, with its secrets nowhere in it", async () => {
  const output = join(dir.path, "bundle");
  const r = await cairn(["debug", `-http-addr=${dev.httpAddr}`, "-duration=3s", "-interval=1s", `-output=${output}`, `-token=${cliToken}`], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /Saved debug archive: .*bundle\.tar\.gz/);
  const listed = spawnSync("tar", ["-tzf", `${output}.tar.gz`], { encoding: "utf8" });
  assert.equal(listed.status, 0, listed.stderr);
  const extract = join(dir.path, "x");
  spawnSync("mkdir", ["-p", extract]);
  assert.equal(spawnSync("tar", ["-xzf", `${output}.tar.gz`, "-C", extract]).status, 0);
  const root = join(extract, "bundle");
  const files = filesUnder(root);
  for (const f of ["index.json", "agent.json", "members.json", "host.json", "raft.json", "consul.log", "profile.cpuprofile", "heap.heapsnapshot"]) {
    assert.ok(files.includes(f), `${f} in ${files.join(", ")}`);
  }
  const metrics = files.filter((f) => /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ(-\d+)?\/metrics\.json$/.test(f));
  assert.ok(metrics.length >= 2, `metrics every interval: ${files.join(", ")}`);
  const read = (f: string) => readFileSync(join(root, f), "utf8");
  const index = JSON.parse(read("index.json")) as Record<string, unknown>;
  assert.equal(index.Version, 1);
  assert.deepEqual(index.Targets, ["metrics", "logs", "pprof", "host", "agent", "members"]);
  assert.equal(index.Errors, undefined, JSON.stringify(index.Errors));
  const self = JSON.parse(read("agent.json")) as { DebugConfig: Record<string, unknown>; Config: { NodeName: string } };
  assert.equal(self.DebugConfig.EnableDebug, true);
  const members = JSON.parse(read("members.json")) as { Name: string }[];
  assert.ok(members.some((m) => m.Name === self.Config.NodeName));
  const host = JSON.parse(read("host.json")) as { Memory: { total: number }; Host: { os: string } };
  assert.ok(host.Memory.total > 0 && host.Host.os === "linux");
  assert.match(read("consul.log"), /\[DEBUG\]/);
  const profile = JSON.parse(read("profile.cpuprofile")) as { nodes: unknown[]; endTime: number; startTime: number };
  assert.ok(profile.nodes.length > 0);
  assert.ok(profile.endTime - profile.startTime >= 2_500_000, "the profile covers the run (µs)");
  const heap = JSON.parse(read("heap.heapsnapshot")) as { snapshot: { node_count: number } };
  assert.ok(heap.snapshot.node_count > 1000);
  // The secrets: the gossip key, the token in the agent's config, the token the command used.
  for (const f of files) {
    const text = read(f);
    assert.ok(!text.includes(key), `gossip key in ${f}`);
    assert.ok(!text.includes(configToken), `config token in ${f}`);
    assert.ok(!text.includes(cliToken), `CLI token in ${f}`);
  }
  // (and the heap had them to hide: the key is live in the agent's keyring)
  assert.match(read("heap.heapsnapshot"), /<redacted>/);
});

test("debug: -archive=false leaves the directory; -capture limits what is asked", async () => {
  const output = join(dir.path, "plain");
  const r = await cairn(["debug", `-http-addr=${dev.httpAddr}`, "-duration=1s", "-interval=1s", `-output=${output}`, "-archive=false", "-capture=agent", "-capture=host"], { timeoutMs: 30_000 });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.deepEqual(filesUnder(output).sort(), ["agent.json", "host.json", "index.json", "raft.json"]);
});

test("debug: a server without enable_debug answers 401 to the profile endpoints; debug warns and captures the rest", async () => {
  const server = await startAgent("nodebug", { server: true, args: ["-bootstrap"], ready: "leader" });
  try {
    const denied = await fetch(`${server.http}/v1/agent/debug/heap`);
    assert.equal(denied.status, 401);
    assert.match(await denied.text(), /enable_debug/);
    const host = (await (await fetch(`${server.http}/v1/agent/host`)).json()) as { Disk: { path: string; total: number } };
    assert.equal(host.Disk.path, server.dir);
    assert.ok(host.Disk.total > 0);
    const output = join(dir.path, "nodebug");
    const r = await cairn(["debug", `-http-addr=${server.httpAddr}`, "-duration=1s", "-interval=1s", `-output=${output}`, "-archive=false"], { timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /Unable to capture pprof/);
    const files = filesUnder(output);
    assert.ok(!files.includes("profile.cpuprofile") && !files.includes("heap.heapsnapshot"));
    assert.ok(files.includes("consul.log") && files.includes("host.json"));
  } finally {
    await server.stop();
  }
});

test("debug: interrupted (SIGINT), it archives what it captured, with the heap snapshot, and says the profile was cut", async () => {
  const output = join(dir.path, "interrupted");
  const proc = startCairn(["debug", `-http-addr=${dev.httpAddr}`, "-duration=60s", "-interval=1s", `-output=${output}`]);
  await waitFor(() => /Capture successful .* \(1\)/.test(proc.output()), { timeoutMs: 20_000, what: "two metrics captures" });
  assert.equal(await proc.kill("SIGINT"), 0, proc.output());
  assert.match(proc.output(), /Capture interrupted: archiving what was captured/);
  const extract = join(dir.path, "xi");
  spawnSync("mkdir", ["-p", extract]);
  assert.equal(spawnSync("tar", ["-xzf", `${output}.tar.gz`, "-C", extract]).status, 0);
  const files = filesUnder(join(extract, "interrupted"));
  assert.ok(files.includes("heap.heapsnapshot") && files.includes("consul.log") && !files.includes("profile.cpuprofile"), files.join(", "));
  const index = JSON.parse(readFileSync(join(extract, "interrupted", "index.json"), "utf8")) as { Errors: Record<string, string> };
  assert.equal(index.Errors["pprof (CPU profile)"], "interrupted before the profile was complete");
});
