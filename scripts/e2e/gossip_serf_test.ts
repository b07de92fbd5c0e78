// cairn agents and the stock Debian `serf` agent (0.9.4) in one pool, plain
// and with gossip encryption: serf joins cairn and cairn joins serf, both
// sides list the same members alive, a `serf event` reaches cairn's
// /v1/event/list, kill -9 of either side is marked failed by the other,
// `cairn keyring` rotates keys on the serf agent too, and a wrong key makes
// the join fail with a clear message. Skipped when /usr/bin/serf is missing.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { cairnBin, run, serf, serfBin, startAgent, startSerf, waitFor, type Agent, type SerfAgent } from "./harness.ts";

const skip = existsSync(serfBin) ? false : "serf binary not installed";

/** A serf agent on loopback, logging at debug level. */
function startSerfAgent(name: string, args: string[] = []): Promise<SerfAgent> {
  return startSerf(name, { args: ["-log-level=debug", ...args] });
}

async function serfMembers(s: SerfAgent): Promise<Record<string, string>> {
  const out = (await serf(s, ["members"], { timeoutMs: 5_000 })).stdout;
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
    const c1 = await startAgent("c1", { args: enc });
    // serf joins cairn.
    const s1 = await startSerfAgent("s1", [`-join=${c1.serfAddr}`, ...enc]);
    // cairn joins serf.
    const s2 = await startSerfAgent("s2", enc);
    const j = await run(cairnBin, ["join", `-http-addr=${c1.httpAddr}`, s2.addr]);
    assert.equal(j.code, 0, j.stderr);
    const c2 = await startAgent("c2", { args: [`-join=${s2.addr}`, ...enc] });
    const everyone = ["c1", "c2", "s1", "s2"];
    const allAlive = (m: Record<string, string>) => everyone.every((n) => m[n] === "alive");
    await waitFor(async () => allAlive(await cairnMembers(c1)) && allAlive(await cairnMembers(c2)), { timeoutMs: 20_000, what: "all alive on cairn" });
    await waitFor(async () => allAlive(await serfMembers(s1)) && allAlive(await serfMembers(s2)), { timeoutMs: 20_000, what: "all alive on serf" });

    // A serf user event reaches cairn's event list (both agents).
    const ev = await serf(s1, ["event", "deploy", "v9"], { timeoutMs: 5_000 });
    assert.equal(ev.code, 0, ev.stderr);
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
      const sk = await serf(s2, ["keys", "-list"], { timeoutMs: 5_000 });
      assert.ok(sk.stdout.includes(k2) && !sk.stdout.includes(k1), sk.stdout + sk.stderr);
      // Still one pool after the rotation.
      await waitFor(async () => allAlive(await cairnMembers(c1)) && allAlive(await serfMembers(s2)), { what: "alive after rotation" });

      // A cairn agent with the wrong key cannot join, and says why.
      const c3 = await startAgent("c3", { args: [`-encrypt=${key(33)}`] });
      const bad = await run(cairnBin, ["join", `-http-addr=${c3.httpAddr}`, s2.addr]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /Error joining address [\s\S]*(encryption key|decrypt)/i);
      assert.match(bad.stderr, /Failed to join any nodes\./);
      await waitFor(() => /No installed keys could decrypt the message/.test(s2.proc.output()), { what: "serf logs the decrypt failure" });
      // And serf with the wrong key cannot join cairn: cairn logs why.
      const s3 = await startSerfAgent("s3", [`-encrypt=${key(44)}`]);
      const sj = await serf(s3, ["join", c1.serfAddr], { timeoutMs: 15_000 });
      assert.notEqual(sj.code, 0, sj.stdout);
      await waitFor(() => /No installed keys could decrypt the message/.test(c1.proc.output()), { what: "cairn logs the decrypt failure" });
      await s3.proc.kill("SIGKILL");
      await c3.proc.kill("SIGKILL");
    }

    // kill -9 of a serf agent: cairn marks it failed; of a cairn agent: serf does.
    await s1.proc.kill("SIGKILL");
    await waitFor(async () => (await cairnMembers(c1)).s1 === "failed", { timeoutMs: 30_000, what: "s1 failed on c1" });
    await c2.proc.kill("SIGKILL");
    await waitFor(async () => (await serfMembers(s2)).c2 === "failed", { timeoutMs: 30_000, what: "c2 failed on s2" });
    await s2.proc.kill("SIGKILL");
    await c1.proc.kill("SIGKILL");
  });
}
