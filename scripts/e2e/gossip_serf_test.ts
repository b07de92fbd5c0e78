// cairn agents and the stock Debian `serf` agent (0.9.4) in one pool, plain
// and with gossip encryption: serf joins cairn and cairn joins serf, both
// sides list the same members alive, a `serf event` reaches cairn's
// /v1/event/list, kill -9 of either side is marked failed by the other,
// `cairn keyring` rotates keys on the serf agent too, and a wrong key makes
// the join fail with a clear message. Skipped when /usr/bin/serf is missing.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { cairnBin, freePort, run, startProcess, tempDir, waitFor, type Proc } from "./harness.ts";
import { useCleanup } from "./cleanup.ts";

const serfBin = "/usr/bin/serf";
const skip = existsSync(serfBin) ? false : "serf binary not installed";

const cleanup = useCleanup();

interface Agent {
  name: string;
  proc: Proc;
  http: string;
  httpAddr: string;
  serfPort: number;
}

async function startClient(name: string, extra: string[] = []): Promise<Agent> {
  const dir = tempDir(`cairn-serf-${name}-`);
  cleanup.dir(dir);
  const httpPort = await freePort();
  const serfPort = await freePort();
  const proc = startProcess(cairnBin, [
    "agent", `-node=${name}`, `-data-dir=${dir.path}`, "-bind=127.0.0.1", "-client=127.0.0.1",
    `-serf-lan-port=${serfPort}`, `-http-port=${httpPort}`, "-dns-port=-1", ...extra,
  ]);
  cleanup.proc(proc);
  const http = `http://127.0.0.1:${httpPort}`;
  await waitFor(async () => {
    if (proc.child.exitCode !== null) throw new Error(`agent ${name} exited:\n${proc.output()}`);
    return (await fetch(`${http}/v1/agent/self`)).ok;
  }, { timeoutMs: 20_000, what: `agent ${name}` });
  return { name, proc, http, httpAddr: `127.0.0.1:${httpPort}`, serfPort };
}

interface Serf {
  name: string;
  proc: Proc;
  port: number;
  rpc: string;
}

async function startSerf(name: string, extra: string[] = []): Promise<Serf> {
  const port = await freePort();
  const rpcPort = await freePort();
  const proc = startProcess(serfBin, ["agent", `-node=${name}`, `-bind=127.0.0.1:${port}`, `-rpc-addr=127.0.0.1:${rpcPort}`, "-log-level=debug", ...extra]);
  cleanup.proc(proc);
  const rpc = `-rpc-addr=127.0.0.1:${rpcPort}`;
  await waitFor(() => spawnSync(serfBin, ["members", rpc], { encoding: "utf8", timeout: 5000 }).status === 0, { what: `serf ${name}` });
  return { name, proc, port, rpc };
}

function serfMembers(s: Serf): Record<string, string> {
  const out = spawnSync(serfBin, ["members", s.rpc], { encoding: "utf8", timeout: 5000 }).stdout;
  const res: Record<string, string> = {};
  for (const line of out.split("\n")) {
    const [name, , status] = line.trim().split(/\s+/);
    if (name && status) res[name] = status;
  }
  return res;
}

async function cairnMembers(a: Agent): Promise<Record<string, string>> {
  const list = (await (await fetch(`${a.http}/v1/agent/members`)).json()) as Array<{ Name: string; Status: number }>;
  return Object.fromEntries(list.map((m) => [m.Name, ["none", "alive", "leaving", "left", "failed"][m.Status] ?? "?"]));
}

const key = (fill: number) => Buffer.alloc(32, fill).toString("base64");

for (const encrypted of [false, true]) {
  test(`gossip e2e with serf 0.9.4${encrypted ? ", encrypted" : ""}: joins both ways, events, failures${encrypted ? ", key rotation, wrong key" : ""}`, { skip }, async () => {
    const k1 = key(11);
    const k2 = key(22);
    const enc = encrypted ? [`-encrypt=${k1}`] : [];
    const c1 = await startClient("c1", enc);
    // serf joins cairn.
    const s1 = await startSerf("s1", [`-join=127.0.0.1:${c1.serfPort}`, ...enc]);
    // cairn joins serf.
    const s2 = await startSerf("s2", enc);
    const j = await run(cairnBin, ["join", `-http-addr=${c1.httpAddr}`, `127.0.0.1:${s2.port}`]);
    assert.equal(j.code, 0, j.stderr);
    const c2 = await startClient("c2", [`-join=127.0.0.1:${s2.port}`, ...enc]);
    const everyone = ["c1", "c2", "s1", "s2"];
    const allAlive = (m: Record<string, string>) => everyone.every((n) => m[n] === "alive");
    await waitFor(async () => allAlive(await cairnMembers(c1)) && allAlive(await cairnMembers(c2)), { timeoutMs: 20_000, what: "all alive on cairn" });
    await waitFor(() => allAlive(serfMembers(s1)) && allAlive(serfMembers(s2)), { timeoutMs: 20_000, what: "all alive on serf" });

    // A serf user event reaches cairn's event list (both agents).
    const ev = spawnSync(serfBin, ["event", s1.rpc, "deploy", "v9"], { encoding: "utf8", timeout: 5000 });
    assert.equal(ev.status, 0, ev.stderr);
    for (const a of [c1, c2]) {
      await waitFor(async () => {
        const list = (await (await fetch(`${a.http}/v1/event/list?name=deploy`)).json()) as Array<{ Payload: string | null }>;
        return list.some((e) => e.Payload !== null && Buffer.from(e.Payload, "base64").toString() === "v9");
      }, { what: `serf event on ${a.name}` });
    }

    if (encrypted) {
      // Rotate: install k2, make it primary, remove k1; serf follows.
      for (const args of [["-install", k2], ["-use", k2], ["-remove", k1]]) {
        const r = await run(cairnBin, ["keyring", `-http-addr=${c1.httpAddr}`, `${args[0]}=${args[1]}`]);
        assert.equal(r.code, 0, `${args[0]}: ${r.stdout}${r.stderr}`);
      }
      const list = await run(cairnBin, ["keyring", `-http-addr=${c1.httpAddr}`, "-list"]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /==> Gathering installed encryption keys\.\.\./);
      assert.match(list.stdout, new RegExp(`dc1 \\(LAN\\):\\n  ${k2.replace(/[+/=]/g, "\\$&")} \\[4/4\\]`));
      assert.ok(!list.stdout.includes(k1), list.stdout);
      const sk = spawnSync(serfBin, ["keys", "-list", s2.rpc], { encoding: "utf8", timeout: 5000 });
      assert.ok(sk.stdout.includes(k2) && !sk.stdout.includes(k1), sk.stdout + sk.stderr);
      // Still one pool after the rotation.
      await waitFor(async () => allAlive(await cairnMembers(c1)) && allAlive(serfMembers(s2)), { what: "alive after rotation" });

      // A cairn agent with the wrong key cannot join, and says why.
      const c3 = await startClient("c3", [`-encrypt=${key(33)}`]);
      const bad = await run(cairnBin, ["join", `-http-addr=${c3.httpAddr}`, `127.0.0.1:${s2.port}`]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /Error joining address [\s\S]*(encryption key|decrypt)/i);
      assert.match(bad.stderr, /Failed to join any nodes\./);
      await waitFor(() => /No installed keys could decrypt the message/.test(s2.proc.output()), { what: "serf logs the decrypt failure" });
      // And serf with the wrong key cannot join cairn: cairn logs why.
      const s3 = await startSerf("s3", [`-encrypt=${key(44)}`]);
      const sj = spawnSync(serfBin, ["join", s3.rpc, `127.0.0.1:${c1.serfPort}`], { encoding: "utf8", timeout: 15_000 });
      assert.notEqual(sj.status, 0, sj.stdout);
      await waitFor(() => /No installed keys could decrypt the message/.test(c1.proc.output()), { what: "cairn logs the decrypt failure" });
      await s3.proc.kill("SIGKILL");
      await c3.proc.kill("SIGKILL");
    }

    // kill -9 of a serf agent: cairn marks it failed; of a cairn agent: serf does.
    await s1.proc.kill("SIGKILL");
    await waitFor(async () => (await cairnMembers(c1)).s1 === "failed", { timeoutMs: 30_000, what: "s1 failed on c1" });
    await c2.proc.kill("SIGKILL");
    await waitFor(() => serfMembers(s2).c2 === "failed", { timeoutMs: 30_000, what: "c2 failed on s2" });
    await s2.proc.kill("SIGKILL");
    await c1.proc.kill("SIGKILL");
  });
}
