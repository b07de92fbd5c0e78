// End-to-end: the agent keys that change how the process behaves, on the
// real binary. Gossip encryption rolled onto a live three-agent pool
// (encrypt_verify_incoming/outgoing, Consul's documented rollout), leave on
// SIGTERM and SIGINT by leave_on_terminate / skip_leave_on_interrupt,
// pid_file and log_file, and a SIGHUP reload of log_level into the log file.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { cairnBin, freePort, run, startAgent, tempDir, waitFor, type Proc } from "./harness.ts";

const dirs: Array<{ remove(): void }> = [];
after(() => {
  for (const d of dirs) d.remove();
});

interface Node {
  name: string;
  dir: string;
  http: number;
  serf: number;
  proc?: Proc;
}

async function node(name: string): Promise<Node> {
  const d = tempDir(`cairn-e2e-${name}-`);
  dirs.push(d);
  return { name, dir: d.path, http: await freePort(), serf: await freePort() };
}

/** Start (or restart) a client agent on loopback, on its data dir and ports; waits until its HTTP API answers. */
async function start(n: Node, args: string[]): Promise<Proc> {
  const a = await startAgent(n.name, { dir: n.dir, use: { http: n.http, serfLan: n.serf }, args: ["-retry-interval=1s", ...args], bin: cairnBin });
  n.proc = a.proc;
  return a.proc;
}

async function statuses(n: Node): Promise<Record<string, number>> {
  const list = (await (await fetch(`http://127.0.0.1:${n.http}/v1/agent/members`)).json()) as Array<{ Name: string; Status: number }>;
  return Object.fromEntries(list.map((m) => [m.Name, m.Status]));
}

/** Every node lists every other as alive (Serf status 1). */
async function whole(nodes: Node[], what: string): Promise<void> {
  await waitFor(async () => {
    for (const n of nodes) {
      const s = await statuses(n);
      if (!nodes.every((o) => s[o.name] === 1)) return false;
    }
    return true;
  }, { timeoutMs: 30_000, what });
}

test("agent e2e: gossip encryption rolled onto a live pool, one agent at a time, with encrypt_verify_incoming/outgoing", async () => {
  const key = Buffer.alloc(32, 3).toString("base64");
  const nodes = [await node("roll0"), await node("roll1"), await node("roll2")];
  const joins = (n: Node) => nodes.filter((o) => o !== n).map((o) => `-retry-join=127.0.0.1:${o.serf}`);
  for (const n of nodes) await start(n, joins(n));
  await whole(nodes, "the plaintext pool");
  const phases: Array<[string, string]> = [
    ["the key, verifying neither way", "encrypt_verify_incoming = false\nencrypt_verify_outgoing = false"],
    ["verify_outgoing", "encrypt_verify_incoming = false\nencrypt_verify_outgoing = true"],
    ["verify_incoming", "encrypt_verify_incoming = true\nencrypt_verify_outgoing = true"],
  ];
  for (const [phase, hcl] of phases) {
    for (const n of nodes) {
      // A client leaves on SIGTERM; it comes back with the new settings and -retry-join.
      assert.equal(await n.proc!.kill("SIGTERM"), 0, n.proc!.output());
      await start(n, [`-encrypt=${key}`, "-hcl", hcl, ...joins(n)]);
      await whole(nodes, `${n.name} restarted with ${phase}`);
    }
  }
  // The pool now refuses plaintext gossip.
  const plain = await node("plain");
  await start(plain, []);
  const j = await run(cairnBin, ["join", `-http-addr=127.0.0.1:${plain.http}`, `127.0.0.1:${nodes[0]!.serf}`]);
  assert.notEqual(j.code, 0, "a plaintext agent cannot join");
  assert.equal((await statuses(nodes[0]!)).plain, undefined);
});

test("agent e2e: SIGTERM leaves (leave_on_terminate); SIGINT with skip_leave_on_interrupt fails instead of leaving", async () => {
  const [a, b, c] = [await node("sig-a"), await node("sig-b"), await node("sig-c")];
  await start(a, []);
  await start(b, [`-retry-join=127.0.0.1:${a.serf}`]);
  await start(c, [`-retry-join=127.0.0.1:${a.serf}`, "-hcl", "skip_leave_on_interrupt = true"]);
  await whole([a, b, c], "three alive");
  assert.equal(await b.proc!.kill("SIGTERM"), 0);
  assert.match(b.proc!.output(), /Gracefully leaving the cluster/);
  await waitFor(async () => (await statuses(a))["sig-b"] === 3, { what: "sig-b left on sig-a" });
  assert.equal(await c.proc!.kill("SIGINT"), 0);
  assert.doesNotMatch(c.proc!.output(), /Gracefully leaving the cluster/);
  await waitFor(async () => (await statuses(a))["sig-c"] === 4, { timeoutMs: 30_000, what: "sig-c failed (not left) on sig-a" });
});

test("agent e2e: pid_file while running; log_file gets the log, and a SIGHUP reload of log_level reaches it", async () => {
  const n = await node("files");
  const pidFile = join(n.dir, "cairn.pid");
  const logDir = join(n.dir, "logs") + "/";
  const conf = join(n.dir, "agent.hcl");
  writeFileSync(conf, 'log_level = "info"\n');
  await run("mkdir", ["-p", logDir]);
  const proc = await start(n, [`-config-file=${conf}`, `-pid-file=${pidFile}`, `-log-file=${logDir}`]);
  assert.equal(readFileSync(pidFile, "utf8"), String(proc.pid));
  const log = join(logDir, "consul.log");
  await waitFor(() => /agent: started/.test(readFileSync(log, "utf8")), { what: "the start in the log file" });
  assert.doesNotMatch(readFileSync(log, "utf8"), /\[DEBUG\]/);
  writeFileSync(conf, 'log_level = "debug"\n');
  proc.child.kill("SIGHUP");
  await waitFor(() => /\[DEBUG\]/.test(readFileSync(log, "utf8")), { timeoutMs: 20_000, what: "debug lines after the reload" });
  assert.equal(await proc.kill("SIGTERM"), 0);
  assert.equal(existsSync(pidFile), false, "the pid file is removed at stop");
});
