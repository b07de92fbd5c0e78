// The gossip commands (members, join, leave, force-leave, keygen, keyring,
// event, rtt) against the real HTTP handlers over a fake gossip pool.
import assert from "node:assert/strict";
import { test } from "node:test";
import { systemClock } from "../core/clock/mod.ts";
import { nullLogger } from "../core/log/mod.ts";
import { UserEventStore } from "../core/pool/user_events.ts";
import { fakeGossip, fakeMember } from "../core/http/_fake_gossip.ts";
import { testBackends } from "../core/http/_test_env.ts";
import { createRoutes } from "../core/http/routes.ts";
import { makeRequest } from "../core/http/types.ts";
import type { Rpc } from "../core/rpc/methods.ts";
import { createLocalRpc } from "../core/rpc/local.ts";
import { createDevServer } from "../core/server/dev.ts";
import { Rng } from "../core/sim/rng.ts";
import { drainMicrotasks, SimClock } from "../core/sim/sim_clock.ts";
import { testIo } from "./_testing.ts";
import { runCli } from "./run.ts";

function setup(options: { rpc?: Rpc } = {}) {
  const gossip = fakeGossip();
  gossip.lan.list.push(fakeMember("s1", { tags: { role: "consul", dc: "dc1", vsn: "2", build: "0.1.0:abc" }, port: 8303 }));
  gossip.lan.list.push(fakeMember("web", { tags: { role: "web" }, port: 7946 }));
  const events = new UserEventStore({ pool: gossip.lan, nodeName: "n1", localServices: () => [], clock: systemClock, logger: nullLogger() });
  const agent = { datacenter: "dc1", nodeName: "n1", nodeId: "x", server: false, version: "0.1.0", revision: "", advertiseAddr: "127.0.0.1", serfLanPort: 8301 };
  const router = createRoutes(testBackends({ gossip, events, agent, ...(options.rpc ? { rpc: options.rpc } : {}) }));
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const r = await router.handle(makeRequest(req.method, `${url.pathname}${url.search}`, { body }));
    return new Response(typeof r.body === "string" ? r.body : r.body.slice(), { status: r.status, headers: r.headers });
  };
  const cli = async (...argv: string[]) => {
    const io = testIo();
    io.fetch = fetchFn as typeof fetch;
    const code = await runCli(argv, io);
    return { code, out: io.stdoutText, err: io.stderrText };
  };
  return { gossip, cli };
}

test("members: Consul's columns, -detailed, -status filter and exit 2", async () => {
  const { cli } = setup();
  const r = await cli("members");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, [
    "Node  Address         Status  Type     Build  Protocol  DC   Partition  Segment",
    "n1    127.0.0.1:8301  alive   client   0.1.0  2         dc1  default    <default>",
    "n2    127.0.0.1:8311  failed  client   0.1.0  2         dc1  default    <default>",
    "s1    127.0.0.1:8303  alive   server   0.1.0  2         dc1  default    <all>",
    "web   127.0.0.1:7946  alive   unknown",
    "",
  ].join("\n"));
  const failed = await cli("members", "-status=fail");
  assert.equal(failed.code, 0);
  assert.equal(failed.out.trim().split("\n").length, 2);
  assert.equal((await cli("members", "-status=left")).code, 2);
  assert.equal((await cli("members", "-status=(")).code, 1);
  const d = await cli("members", "-detailed");
  assert.match(d.out, /^Node\s+Address\s+Status\s+Tags\n/);
  assert.match(d.out, /n1\s+127\.0\.0\.1:8301\s+alive\s+build=0\.1\.0:abcdef12,dc=dc1,role=node,segment=,vsn=2/);
  const wan = await cli("members", "-wan");
  assert.equal(wan.code, 1);
  assert.match(wan.err, /Error retrieving members: .*WAN/);
});

test("join, leave, force-leave: messages and exit codes", async () => {
  const { gossip, cli } = setup();
  const j = await cli("join", "10.0.0.1", "10.0.0.2");
  assert.equal(j.code, 0);
  assert.equal(j.out, "Successfully joined cluster by contacting 2 nodes.\n");
  gossip.lan.joinResult = { joined: 0, errors: ["boom"] };
  const bad = await cli("join", "10.0.0.3");
  assert.equal(bad.code, 1);
  assert.match(bad.err, /Error joining address '10\.0\.0\.3': Unexpected response code: 500 \(1 error occurred:/);
  assert.match(bad.err, /Failed to join any nodes\.\n$/);
  assert.equal((await cli("join")).code, 1);
  const fl = await cli("force-leave", "-prune", "n2");
  assert.equal(fl.code, 0, fl.err);
  assert.deepEqual(gossip.lan.forceLeaves, [{ node: "n2", prune: true }]);
  const ghost = await cli("force-leave", "ghost");
  assert.equal(ghost.code, 1);
  assert.match(ghost.err, /Error force leaving: .*No node found with name 'ghost'/);
  const l = await cli("leave");
  assert.equal(l.code, 0);
  assert.equal(l.out, "Graceful leave complete\n");
});

test("keygen: 32 random bytes in base64", async () => {
  const { cli } = setup();
  const a = await cli("keygen");
  const b = await cli("keygen");
  assert.equal(a.code, 0);
  assert.equal(Buffer.from(a.out.trim(), "base64").length, 32);
  assert.notEqual(a.out, b.out);
});

test("keyring: list output, one action at a time, errors", async () => {
  const { gossip, cli } = setup();
  const l = await cli("keyring", "-list");
  assert.equal(l.code, 0, l.err);
  assert.equal(l.out, "==> Gathering installed encryption keys...\n\ndc1 (LAN):\n  K1== [2/2]\n");
  const i = await cli("keyring", "-install=K2==");
  assert.equal(i.code, 0);
  assert.equal(i.out, "==> Installing new gossip encryption key...\n");
  assert.equal((await cli("keyring", "-use=K2==")).out, "==> Changing primary gossip encryption key...\n");
  assert.equal((await cli("keyring", "-remove=K1==")).out, "==> Removing gossip encryption key...\n");
  assert.deepEqual(gossip.keyring.calls, ["list", "install K2==", "use K2==", "remove K1=="]);
  assert.match((await cli("keyring", "-list", "-install=x")).err, /Only a single action is allowed/);
  assert.equal((await cli("keyring")).code, 1);
  gossip.keyring.answer = [{ wan: false, datacenter: "dc1", segment: "", keys: {}, primaryKeys: {}, numNodes: 2, messages: {}, error: "1/2 nodes reported success" }];
  const e = await cli("keyring", "-use=K3==");
  assert.equal(e.code, 1);
  assert.match(e.err, /^error: [\s\S]*1\/2 nodes reported success/);
});

test("event: prints the ID; validates filters", async () => {
  const { gossip, cli } = setup();
  const r = await cli("event", "-name=deploy", "-node=^n", "payload");
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^Event ID: [0-9a-f-]{36}\n$/);
  assert.equal(gossip.lan.fired[0]!.name, "consul:event:deploy");
  assert.equal((await cli("event", "payload")).err, "Event name must be specified\n");
  assert.equal((await cli("event", "-name=x", "-tag=a")).code, 1);
  assert.equal((await cli("event", "-name=x", "-node=(")).code, 1);
});

test("rtt: Consul's line from two coordinates in the catalog; default second node is the agent", async () => {
  const clock = new SimClock();
  const dev = await createDevServer({ clock, rng: new Rng(5), coordinateUpdate: { updatePeriodMs: 100 } });
  const h = dev.server.handlers;
  for (const node of ["n1", "n2"]) await h["Catalog.Register"]({ node, address: "10.0.0.1" });
  await h["Coordinate.Update"]({ node: "n1", coord: { vec: [0, 0, 0, 0, 0, 0, 0, 0], error: 0.2, adjustment: 0, height: 0.001 } });
  await h["Coordinate.Update"]({ node: "n2", coord: { vec: [0.002, 0, 0, 0, 0, 0, 0, 0], error: 0.2, adjustment: 0, height: 0.001 } });
  await clock.runFor(100);
  await drainMicrotasks();
  const { cli } = setup({ rpc: createLocalRpc(dev.server) });
  const r = await cli("rtt", "n2");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "Estimated n2 <-> n1 rtt: 4.000 ms (using LAN coordinates)\n");
  const missing = await cli("rtt", "zz", "n1");
  assert.equal(missing.code, 1);
  assert.match(missing.err, /Could not find a coordinate for node "zz"/);
  await dev.stop();
});
