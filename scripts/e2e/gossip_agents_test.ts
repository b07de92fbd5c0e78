// End-to-end gossip between real processes: two cairn client agents join
// each other through `cairn join` and list each other alive, a user event
// crosses, `cairn leave` makes an agent leave and exit, -retry-join gives up
// after -retry-max with exit 1, and kill -9 is marked failed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cairnBin, freePort, run, startAgent, waitFor, type Agent } from "./harness.ts";

async function memberStatuses(a: Agent): Promise<Record<string, number>> {
  const r = await fetch(`${a.http}/v1/agent/members`);
  const list = (await r.json()) as Array<{ Name: string; Status: number }>;
  return Object.fromEntries(list.map((m) => [m.Name, m.Status]));
}

test("gossip e2e: two cairn clients join, list each other, see events, leave", async () => {
  const a = await startAgent("ga");
  const b = await startAgent("gb");
  const j = await run(cairnBin, ["join", `-http-addr=${b.httpAddr}`, a.serfAddr]);
  assert.equal(j.code, 0, j.stderr);
  assert.match(j.stdout, /Successfully joined cluster by contacting 1 nodes\./);
  for (const x of [a, b]) {
    await waitFor(async () => {
      const s = await memberStatuses(x);
      return s.ga === 1 && s.gb === 1;
    }, { what: `both alive on ${x.name}` });
  }
  const m = await run(cairnBin, ["members", `-http-addr=${a.httpAddr}`]);
  assert.equal(m.code, 0, m.stderr);
  assert.match(m.stdout, /^Node\s+Address\s+Status\s+Type\s+Build\s+Protocol\s+DC\s+Partition\s+Segment/);
  assert.match(m.stdout, /gb\s+127\.0\.0\.1:\d+\s+alive\s+client\s+\S+\s+2\s+dc1\s+default\s+<default>/);
  const none = await run(cairnBin, ["members", `-http-addr=${a.httpAddr}`, "-status=failed"]);
  assert.equal(none.code, 2, "nothing matches -status=failed");

  const ev = await run(cairnBin, ["event", `-http-addr=${a.httpAddr}`, "-name=deploy", "v1"]);
  assert.equal(ev.code, 0, ev.stderr);
  const id = /Event ID: (\S+)/.exec(ev.stdout)?.[1];
  assert.ok(id, ev.stdout);
  await waitFor(async () => {
    const list = (await (await fetch(`${b.http}/v1/event/list?name=deploy`)).json()) as Array<{ ID: string; Payload: string }>;
    return list.some((e) => e.ID === id && Buffer.from(e.Payload, "base64").toString() === "v1");
  }, { what: "event on gb" });

  // `cairn rtt` reads the catalog's coordinates, which need servers (as Consul's): scripts/e2e/coordinate_test.ts.

  const l = await run(cairnBin, ["leave", `-http-addr=${b.httpAddr}`]);
  assert.equal(l.code, 0, l.stderr);
  assert.match(l.stdout, /Graceful leave complete/);
  assert.equal(await b.proc.exited, 0, "the agent exits after leaving");
  await waitFor(async () => (await memberStatuses(a)).gb === 3, { what: "gb left on ga" });
});

test("gossip e2e: kill -9 is marked failed; force-leave makes it left", async () => {
  const a = await startAgent("ka");
  const b = await startAgent("kb", { args: [`-join=${a.serfAddr}`] });
  await waitFor(async () => (await memberStatuses(a)).kb === 1, { what: "kb alive on ka" });
  await b.proc.kill("SIGKILL");
  await waitFor(async () => (await memberStatuses(a)).kb === 4, { timeoutMs: 30_000, what: "kb failed on ka" });
  const f = await run(cairnBin, ["force-leave", `-http-addr=${a.httpAddr}`, "kb"]);
  assert.equal(f.code, 0, f.stderr);
  await waitFor(async () => (await memberStatuses(a)).kb === 3, { what: "kb left after force-leave" });
  const g = await run(cairnBin, ["force-leave", `-http-addr=${a.httpAddr}`, "ghost"]);
  assert.equal(g.code, 1);
  assert.match(g.stderr, /No node found with name 'ghost'/);
});

test("gossip e2e: -retry-join gives up after -retry-max with exit 1", async () => {
  const dead = await freePort();
  const a = await startAgent("ra", { args: [`-retry-join=127.0.0.1:${dead}`, "-retry-interval=200ms", "-retry-max=2"], ready: false });
  const code = await Promise.race([a.proc.exited, new Promise((r) => setTimeout(() => r("timeout"), 20_000).unref())]);
  assert.equal(code, 1, a.proc.output());
  assert.match(a.proc.output(), /Join cluster failed/);
});
