// End-to-end: two datacenters on loopback. dc1 has 3 servers and a client,
// dc2 one server and a client; the datacenters are joined by one
// `cairn join -wan` of dc2's server to one server of dc1 (the other dc1
// servers come in through the WAN flood join). Requests with ?dc= at a dc1
// client go to a dc1 server, over the WAN to a dc2 server, and are answered
// there: KV, catalog, health, sessions, a blocking query. Then every server
// of dc2 is killed: dc1 requests for dc2 fail fast with Consul's errors,
// local ones do not notice, and dc2 comes back by itself after a restart.
import assert from "node:assert/strict";
import { Resolver } from "node:dns/promises";
import { test } from "node:test";
import { until } from "../../core/testing/until.ts";
import { cairn, type Agent, type ServerSpec } from "./harness.ts";
import { startTwoDcs, tails } from "./_two_dcs.ts";

interface Reply {
  status: number;
  text: string;
  headers: Headers;
}

async function req(url: string, init: RequestInit = {}): Promise<Reply> {
  const r = await fetch(url, { ...init, signal: init.signal ?? AbortSignal.timeout(30_000) });
  return { status: r.status, text: await r.text(), headers: r.headers };
}

async function json<T>(url: string): Promise<T> {
  const r = await req(url);
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as T;
}

async function put(url: string, body?: unknown, method = "PUT"): Promise<string> {
  const r = await req(url, { method, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${r.text}`);
  return r.text;
}

function urlOf(s: ServerSpec, path: string): string {
  return `http://${s.addr}:${s.http}${path}`;
}

test("two datacenters: WAN pool, cross-datacenter KV, catalog, health, sessions, blocking query, DNS, prepared-query failover, the other endpoints and -datacenter; a dead datacenter fails fast and comes back", { timeout: 300_000 }, async () => {
  const t = await startTwoDcs();
  const { dc1, dc2, c1, c2 } = t;
  try {
    // 1. The WAN pool: all four servers, every one of them, through the flood join.
    for (const s of [...dc1.servers, ...dc2.servers]) {
      await until(async () => {
        const m = await json<Array<{ Name: string; Status: number }>>(urlOf(s, "/v1/agent/members?wan=1"));
        return m.filter((x) => x.Status === 1).length === 4 ? m : undefined;
      }, `4 alive WAN members seen by ${s.name}`, { timeoutMs: 60_000 }).catch((err) => { throw new Error(`${String(err)}${tails(dc1)}${tails(dc2)}`); });
    }
    const wanNames = (await json<Array<{ Name: string }>>(urlOf(dc2.servers[0]!, "/v1/agent/members?wan=1"))).map((m) => m.Name).sort();
    assert.deepEqual(wanNames, ["s1.dc1", "s1.dc2", "s2.dc1", "s3.dc1"]);
    const members = await cairn(["members", "-wan", `-http-addr=${dc1.servers[1]!.addr}:${dc1.servers[1]!.http}`]);
    assert.equal(members.code, 0, members.stderr);
    assert.match(members.stdout, /s1\.dc2\s/);
    // Both datacenters listed everywhere, the local one first.
    assert.deepEqual(await json<string[]>(`${c1.http}/v1/catalog/datacenters`), ["dc1", "dc2"]);
    assert.deepEqual(await json<string[]>(`${c2.http}/v1/catalog/datacenters`), ["dc2", "dc1"]);

    // 2. KV: written through dc1 for dc2, stored in dc2 only.
    assert.equal(await put(`${c1.http}/v1/kv/cross/key?dc=dc2`, "in-dc2"), "true");
    const local2 = await req(`${c2.http}/v1/kv/cross/key?raw`);
    assert.equal(local2.status, 200);
    assert.equal(local2.text, "in-dc2");
    assert.equal((await req(`${c1.http}/v1/kv/cross/key`)).status, 404, "not in dc1");
    const across = await req(`${c1.http}/v1/kv/cross/key?dc=dc2`);
    assert.equal(across.status, 200, across.text);
    const entry = (JSON.parse(across.text) as Array<{ Key: string; Value: string; ModifyIndex: number }>)[0]!;
    assert.equal(Buffer.from(entry.Value, "base64").toString(), "in-dc2");
    assert.equal(across.headers.get("x-consul-index"), String(entry.ModifyIndex), "the remote index");
    assert.equal(across.headers.get("x-consul-knownleader"), "true");
    const stale = await req(`${c1.http}/v1/kv/cross/key?dc=dc2&stale`);
    assert.equal(stale.status, 200);
    assert.ok(stale.headers.get("x-consul-lastcontact") !== null);
    // CAS and delete across, the CLI with -datacenter too.
    assert.equal(await put(`${c1.http}/v1/kv/cross/key?dc=dc2&cas=1`, "nope"), "false");
    const cli = await cairn(["kv", "get", `-http-addr=${c1.httpAddr}`, "-datacenter=dc2", "cross/key"]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(cli.stdout.trim(), "in-dc2");

    // 3. Catalog and health of dc2, through c1.
    const nodes2 = await json<Array<{ Node: string; Datacenter: string }>>(`${c1.http}/v1/catalog/nodes?dc=dc2`);
    assert.deepEqual(nodes2.map((n) => n.Node).sort(), ["c2", "s1"]);
    assert.ok(nodes2.every((n) => n.Datacenter === "dc2"));
    await put(`${c2.http}/v1/agent/service/register`, { Name: "web", ID: "web-dc2", Port: 8080, Check: { CheckID: "web-ttl", TTL: "300s", Status: "passing" } });
    const healthy = await until(async () => {
      const e = await json<Array<{ Node: { Node: string; Datacenter: string }; Service: { ID: string } }>>(`${c1.http}/v1/health/service/web?dc=dc2&passing`);
      return e.length === 1 ? e : undefined;
    }, "web in dc2 passing, read through dc1", { timeoutMs: 20_000 });
    assert.equal(healthy[0]!.Node.Node, "c2");
    const translated = await req(`${c1.http}/v1/health/service/web?dc=dc2`);
    assert.equal((JSON.parse(translated.text) as Array<{ Node: { Address: string; TaggedAddresses: Record<string, string> } }>)[0]!.Node.Address, "127.0.0.9", "translate_wan_addrs");
    assert.equal(translated.headers.get("x-consul-translate-addresses"), "true");
    assert.equal((await json<Array<{ Node: { Address: string } }>>(`${c2.http}/v1/health/service/web`))[0]!.Node.Address, "127.0.0.1", "dc2 itself answers the LAN address");
    assert.deepEqual(await json<unknown[]>(`${c1.http}/v1/health/service/web`), [], "dc1 has no web");
    const services = await json<Record<string, string[]>>(`${c1.http}/v1/catalog/services?dc=dc2`);
    assert.ok("web" in services && "consul" in services);

    // 4. Sessions: created in dc2 through dc1, known there only.
    const sid = (JSON.parse(await put(`${c1.http}/v1/session/create?dc=dc2`, { Node: "c2", Name: "across", LockDelay: "0s" })) as { ID: string }).ID;
    const info = await json<Array<{ ID: string; Node: string }>>(`${c2.http}/v1/session/info/${sid}`);
    assert.equal(info[0]!.Node, "c2");
    assert.deepEqual((await json<unknown[] | null>(`${c1.http}/v1/session/info/${sid}`)) ?? [], [], "not in dc1");
    assert.equal(await put(`${c1.http}/v1/kv/cross/lock?dc=dc2&acquire=${sid}`, "held"), "true");
    assert.equal((await json<Array<{ Session: string }>>(`${c2.http}/v1/kv/cross/lock`))[0]!.Session, sid);
    assert.equal(await put(`${c1.http}/v1/session/destroy/${sid}?dc=dc2`), "true");

    // 5. A blocking query for dc2 through dc1 blocks on dc2's side and wakes on dc2's write.
    const index = Number((await req(`${c1.http}/v1/kv/cross/block?dc=dc2`)).headers.get("x-consul-index"));
    const started = performance.now();
    const blocked = req(`${c1.http}/v1/kv/cross/block?dc=dc2&index=${index}&wait=20s`);
    await new Promise((r) => setTimeout(r, 500));
    await put(`${c2.http}/v1/kv/cross/block`, "woken");
    const woke = await blocked;
    assert.equal(woke.status, 200, woke.text);
    assert.ok(Number(woke.headers.get("x-consul-index")) > index);
    assert.ok(performance.now() - started < 15_000, "woken by the write, not the timeout");

    // 6. Unknown datacenter: Consul's error, at once.
    const nowhere = await req(`${c1.http}/v1/kv/x?dc=nowhere`);
    assert.equal(nowhere.status, 500);
    assert.equal(nowhere.text, "No path to datacenter");

    // 7. DNS for dc2 through a client of dc1.
    const resolver = new Resolver({ timeout: 3_000, tries: 1 });
    resolver.setServers([`127.0.0.1:${t.c1Dns}`]);
    // translate_wan_addrs at c1: dc2's node answers with its WAN address, 127.0.0.9.
    assert.deepEqual(await resolver.resolve4("web.service.dc2.consul"), ["127.0.0.9"]);
    assert.deepEqual(await resolver.resolve4("c2.node.dc2.consul"), ["127.0.0.9"]);
    assert.deepEqual(await resolver.resolve4("c1.node.consul"), ["127.0.0.1"], "our own datacenter is not translated");
    await assert.rejects(resolver.resolve4("web.service.consul"), /ENOTFOUND/, "no web in dc1");
    await assert.rejects(resolver.resolve4("web.service.dc9.consul"), /ENOTFOUND/, "unknown dc is NXDOMAIN");
    assert.deepEqual(await resolver.resolve4("web.service.dc2.dc.consul"), ["127.0.0.9"], "the <dc>.dc form");
    const srv = await resolver.resolveSrv("web.service.dc2.consul");
    assert.deepEqual(srv.map((r) => [r.name, r.port]), [["c2.node.dc2.consul", 8080]]);

    // 8. Prepared queries: one stored in dc1 with no local instance fails over to the nearest datacenter;
    // one stored in dc2, created and run through dc1; both over DNS too.
    const q1 = (JSON.parse(await put(`${c1.http}/v1/query`, { Name: "web-fo", Service: { Service: "web", Failover: { NearestN: 1 } } }, "POST")) as { ID: string }).ID;
    const ran = await json<{ Service: string; Nodes: Array<{ Node: { Node: string; Datacenter: string } }>; Datacenter: string; Failovers: number }>(`${c1.http}/v1/query/${q1}/execute`);
    assert.deepEqual([ran.Datacenter, ran.Failovers, ran.Nodes.map((n) => `${n.Node.Node}@${n.Node.Datacenter}`)], ["dc2", 1, ["c2@dc2"]]);
    const noFailover = (JSON.parse(await put(`${c1.http}/v1/query`, { Name: "web-here", Service: { Service: "web" } }, "POST")) as { ID: string }).ID;
    const here = await json<{ Nodes: unknown[]; Datacenter: string; Failovers: number }>(`${c1.http}/v1/query/${noFailover}/execute`);
    assert.deepEqual([here.Datacenter, here.Failovers, here.Nodes.length], ["dc1", 0, 0]);
    assert.deepEqual(await resolver.resolve4("web-fo.query.consul"), ["127.0.0.9"], "failover over DNS (dc2's node, translated)");
    await assert.rejects(resolver.resolve4("web-here.query.consul"), /ENOTFOUND/);
    await put(`${c1.http}/v1/query?dc=dc2`, { Name: "web-dc2", Service: { Service: "web" } }, "POST");
    const inDc2 = await json<Array<{ Name: string }>>(`${c2.http}/v1/query`);
    assert.deepEqual(inDc2.map((x) => x.Name), ["web-dc2"], "created in dc2");
    const remoteRun = await json<{ Datacenter: string; Failovers: number; Nodes: unknown[] }>(`${c1.http}/v1/query/web-dc2/execute?dc=dc2`);
    assert.deepEqual([remoteRun.Datacenter, remoteRun.Failovers, remoteRun.Nodes.length], ["dc2", 0, 1]);
    assert.deepEqual(await resolver.resolve4("web-dc2.query.dc2.consul"), ["127.0.0.9"]);

    // 9. The other endpoints and the CLI's -datacenter: txn, status, coordinates, operator raft, events, snapshots.
    const txn = await req(`${c1.http}/v1/txn?dc=dc2`, { method: "PUT", body: JSON.stringify([{ KV: { Verb: "get", Key: "cross/key" } }]) });
    assert.equal(txn.status, 200, txn.text);
    assert.equal(Buffer.from((JSON.parse(txn.text) as { Results: Array<{ KV: { Value: string } }> }).Results[0]!.KV.Value, "base64").toString(), "in-dc2");
    assert.equal(await json<string>(`${c1.http}/v1/status/leader?dc=dc2`), dc2.rpcAddr(dc2.servers[0]!));
    assert.deepEqual(await json<string[]>(`${c1.http}/v1/status/peers?dc=dc2`), [dc2.rpcAddr(dc2.servers[0]!)]);
    assert.equal((await req(`${c1.http}/v1/coordinate/nodes?dc=dc2`)).status, 200);
    // Coordinates appear as WAN probes measure them; the order is ours first.
    const coordDcs = async (a: Agent) => (await json<Array<{ Datacenter: string; Coordinates: unknown[] }>>(`${a.http}/v1/coordinate/datacenters`)).filter((d) => d.Coordinates.length > 0).map((d) => d.Datacenter);
    const seen1 = await until(async () => { const l = await coordDcs(c1); return l.length === 2 ? l : undefined; }, "WAN coordinates of both datacenters, through c1", { timeoutMs: 60_000 });
    assert.deepEqual(seen1, ["dc1", "dc2"], "a client asks a server; ours first");
    const seen2 = await until(async () => { const l = await coordDcs(c2); return l.length === 2 ? l : undefined; }, "WAN coordinates of both datacenters, through c2", { timeoutMs: 60_000 });
    assert.deepEqual(seen2, ["dc2", "dc1"]);
    const dcList = await cairn(["catalog", "datacenters", `-http-addr=${c2.httpAddr}`]);
    assert.deepEqual(dcList.stdout.trim().split("\n"), ["dc2", "dc1"]);
    const cliNodes = await cairn(["catalog", "nodes", `-http-addr=${c1.httpAddr}`, "-datacenter=dc2"]);
    assert.equal(cliNodes.code, 0, cliNodes.stderr);
    assert.match(cliNodes.stdout, /^c2\s/m);
    assert.doesNotMatch(cliNodes.stdout, /^c1\s/m);
    const peers = await cairn(["operator", "raft", "list-peers", `-http-addr=${c1.httpAddr}`, "-datacenter=dc2"]);
    assert.equal(peers.code, 0, peers.stderr);
    assert.deepEqual(peers.stdout.trim().split("\n").slice(1).map((l) => l.split(/\s+/)[0]), ["s1"], "dc2's one server");
    assert.match(peers.stdout, new RegExp(dc2.rpcAddr(dc2.servers[0]!).replace(/\./g, "\\.")));
    const fired = await cairn(["event", `-http-addr=${c1.httpAddr}`, "-datacenter=dc2", "-name=deploy-dc2", "payload"]);
    assert.equal(fired.code, 0, fired.stderr);
    await until(async () => (await json<Array<{ Name: string }>>(`${c2.http}/v1/event/list?name=deploy-dc2`)).length === 1, "the event reaches dc2's client", { timeoutMs: 15_000 });
    assert.deepEqual(await json<unknown[]>(`${c1.http}/v1/event/list?name=deploy-dc2`), [], "not fired in dc1");
    const snap = await fetch(`${c1.http}/v1/snapshot?dc=dc2`, { signal: AbortSignal.timeout(30_000) });
    assert.equal(snap.status, 200, await snap.clone().text());
    assert.ok((await snap.arrayBuffer()).byteLength > 0);

    // 10. Every server of dc2 killed: requests for dc2 fail fast, local ones are unaffected.
    await dc2.kill(dc2.servers[0]!);
    const failFast = async (): Promise<Reply> => {
      const t0 = performance.now();
      const r = await req(`${c1.http}/v1/kv/cross/key?dc=dc2`);
      return { ...r, text: `${r.text} (${Math.round(performance.now() - t0)} ms)` };
    };
    const dead = await failFast();
    assert.equal(dead.status, 500);
    assert.match(dead.text, /^Remote DC has no server currently reachable \(\d+ ms\)$/);
    assert.ok(Number(/\((\d+) ms\)/.exec(dead.text)![1]) < 2_000, `fails fast: ${dead.text}`);
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      assert.equal((await req(`${c1.http}/v1/kv/cross/key`)).status, 404);
      assert.equal(await put(`${c1.http}/v1/kv/local/${i}`, "x"), "true");
      assert.ok(performance.now() - t0 < 1_000, "local requests do not wait on the dead datacenter");
    }
    // DNS: the dead datacenter's names fail (SERVFAIL, not NXDOMAIN: it exists), ours still answer.
    await assert.rejects(resolver.resolve4("web.service.dc2.consul"), /ESERVFAIL/);
    assert.deepEqual(await resolver.resolve4("c1.node.consul"), ["127.0.0.1"]);
    // Once the WAN pool has marked it failed, still the same error, without dialing.
    await until(async () => {
      const m = await json<Array<{ Name: string; Status: number }>>(urlOf(dc1.servers[0]!, "/v1/agent/members?wan=1"));
      return m.find((x) => x.Name === "s1.dc2")?.Status === 4;
    }, "s1.dc2 failed in dc1's WAN pool", { timeoutMs: 60_000 });
    const failed = await failFast();
    assert.match(failed.text, /^Remote DC has no server currently reachable/);
    assert.deepEqual(await json<string[]>(`${c1.http}/v1/catalog/datacenters`), ["dc1", "dc2"], "still a known datacenter");

    // 11. dc2's server restarted (same data dir, same ports): it rejoins the WAN pool by itself.
    dc2.start(dc2.servers[0]!);
    await until(async () => {
      const r = await req(`${c1.http}/v1/kv/cross/key?dc=dc2&raw`, { signal: AbortSignal.timeout(5_000) });
      return r.status === 200 && r.text === "in-dc2";
    }, "dc2 answering through dc1 again after its restart", { timeoutMs: 90_000 }).catch((err) => { throw new Error(`${String(err)}${tails(dc2)}`); });
  } finally {
    await t.stop();
  }
});
