// SRV answers and their additional section, as Consul builds them
// (agent/dns.go addServiceSRVRecordsToMessage, makeNodeServiceRecords): one
// target name per instance and one group of additional records per SRV
// record, duplicates included, so a resolver that ties each additional
// record to one SRV record (HAProxy's `resolvers`) finds an address for every
// instance, also when instances share a host.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as dnsPacket from "dns-packet";
import { Rng, seeds } from "../sim/rng.ts";
import { messageSize, type DnsAnswer, type DnsAnswerConfig, type DnsRecord } from "./answer.ts";
import { createDnsResolver, type DnsResolveOptions } from "./driver.ts";
import { FakeBackend, makeInstance, makeNode, testConfig } from "./_fake_backend.ts";

function world(config: Partial<DnsAnswerConfig> = {}, seed = 1) {
  const backend = new FakeBackend();
  const resolver = createDnsResolver({ backend, config: testConfig(config), rng: new Rng(seed), wallNow: () => 1_700_000_000_000 });
  const ask = (name: string, type: string, options: DnsResolveOptions = { transport: "tcp" }) =>
    resolver.resolve({ name, type }, options);
  return { backend, resolver, ask };
}

function srvs(a: DnsAnswer): Array<{ port: number; target: string; ttl: number }> {
  return a.answers.flatMap((r) => r.type === "SRV" ? [{ port: r.data.port, target: r.data.target, ttl: r.ttl }] : []);
}

function rows(records: DnsRecord[]): string[] {
  return records.map((r) => `${r.name} ${r.ttl} ${r.type} ${typeof r.data === "string" ? r.data : JSON.stringify(r.data)}`);
}

/**
 * HAProxy's matching (src/resolvers.c resolv_validate_dns_response): each
 * A/AAAA additional record, in order, goes to the first SRV record with
 * that target that has none yet; others are dropped. Returns, per SRV
 * record, the address it got (undefined: HAProxy would have to resolve the
 * target by itself, and skips an address another server already uses).
 */
function haproxyMatch(answers: readonly DnsRecord[], additionals: readonly DnsRecord[]): Array<string | undefined> {
  const got: Array<string | undefined> = answers.map(() => undefined);
  for (const r of additionals) {
    if (r.type !== "A" && r.type !== "AAAA") continue;
    const i = answers.findIndex((s, k) => s.type === "SRV" && got[k] === undefined && s.data.target.toLowerCase() === r.name.toLowerCase());
    if (i >= 0) got[i] = r.data;
  }
  return got;
}

test("same host, service address equal to the node's: every SRV record has its own .addr target and A record", async () => {
  const w = world({ serviceTtlMs: { web: 9_000 } });
  const host = makeNode("host-1", "127.0.0.1");
  for (const port of [8001, 8002, 8003]) w.backend.instances.push(makeInstance(host, "web", { id: `web-${port}`, address: "127.0.0.1", port }));
  const a = await w.ask("_web._tcp.service.consul.", "SRV", { transport: "udp", ednsSize: 8192 });
  assert.deepEqual(srvs(a).map((s) => s.port).sort(), [8001, 8002, 8003]);
  assert.ok(srvs(a).every((s) => s.target === "7f000001.addr.dc1.consul." && s.ttl === 9), "a service address that is an IP is an .addr target");
  assert.deepEqual(rows(a.additionals), [
    "7f000001.addr.dc1.consul. 9 A 127.0.0.1",
    "7f000001.addr.dc1.consul. 9 A 127.0.0.1",
    "7f000001.addr.dc1.consul. 9 A 127.0.0.1",
  ], "one A per SRV record, duplicates kept, service TTL");
  assert.deepEqual(a.additionalsPerAnswer, [1, 1, 1]);
  assert.deepEqual(haproxyMatch(a.answers, a.additionals), ["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
});

test("same host, no service address: node targets, and each SRV record brings the node's A and meta TXT", async () => {
  const w = world({ serviceTtlMs: { "*": 4_000 } });
  const host = makeNode("Host-1", "10.0.0.5", { rack: "r1" });
  for (const port of [9001, 9002, 9003]) w.backend.instances.push(makeInstance(host, "api", { id: `api-${port}`, port }));
  const a = await w.ask("api.service.consul.", "SRV");
  assert.ok(srvs(a).every((s) => s.target === "host-1.node.dc1.consul."), JSON.stringify(srvs(a)));
  assert.deepEqual(rows(a.additionals), [0, 1, 2].flatMap(() => [
    "host-1.node.dc1.consul. 4 A 10.0.0.5",
    'host-1.node.dc1.consul. 4 TXT ["rack=r1"]',
  ]));
  assert.deepEqual(a.additionalsPerAnswer, [2, 2, 2]);
  assert.deepEqual(haproxyMatch(a.answers, a.additionals), ["10.0.0.5", "10.0.0.5", "10.0.0.5"]);
});

test("targets: service IP (v4 and v6) → .addr with the node's meta TXT under the node name; hostnames → themselves", async () => {
  const w = world();
  const n1 = makeNode("n1", "10.0.0.1", { zone: "a" });
  const named = makeNode("ext", "db.example.com");
  w.backend.instances.push(
    makeInstance(n1, "svc", { id: "v4", address: "192.168.1.7", port: 1 }),
    makeInstance(n1, "svc", { id: "v6", address: "2001:db8::7", port: 2 }),
    makeInstance(n1, "svc", { id: "host", address: "Cache.Example.com", port: 3 }),
    makeInstance(named, "svc", { id: "node-host", port: 4 }),
    makeInstance(n1, "svc", { id: "self", address: "svc.service.consul", port: 5 }),
  );
  const a = await w.ask("svc.service.consul.", "SRV");
  const byPort = new Map(srvs(a).map((s) => [s.port, s.target]));
  assert.equal(byPort.get(1), "c0a80107.addr.dc1.consul.");
  assert.equal(byPort.get(2), "20010db8000000000000000000000007.addr.dc1.consul.");
  assert.equal(byPort.get(3), "cache.example.com.", "a service hostname is the target itself");
  assert.equal(byPort.get(4), "db.example.com.", "a node hostname is the target itself");
  assert.equal(byPort.get(5), "n1.node.dc1.consul.", "a service address naming the question falls back to the node");
  // Each SRV record's group, in answer order.
  let at = 0;
  const groups = new Map<number, string[]>();
  a.answers.forEach((r, i) => {
    const n = a.additionalsPerAnswer![i]!;
    groups.set(r.type === "SRV" ? r.data.port : -1, rows(a.additionals.slice(at, at + n)));
    at += n;
  });
  assert.equal(at, a.additionals.length);
  assert.deepEqual(groups.get(1), ["c0a80107.addr.dc1.consul. 0 A 192.168.1.7", 'n1.node.dc1.consul. 0 TXT ["zone=a"]']);
  assert.deepEqual(groups.get(2), ["20010db8000000000000000000000007.addr.dc1.consul. 0 AAAA 2001:db8::7", 'n1.node.dc1.consul. 0 TXT ["zone=a"]']);
  assert.deepEqual(groups.get(3), ['n1.node.dc1.consul. 0 TXT ["zone=a"]']);
  assert.deepEqual(groups.get(4), []);
  assert.deepEqual(groups.get(5), ["n1.node.dc1.consul. 0 A 10.0.0.1", 'n1.node.dc1.consul. 0 TXT ["zone=a"]']);
});

test("one SRV record per node, service address and port; other ports or addresses stay", async () => {
  const w = world();
  const n1 = makeNode("n1", "10.0.0.1"), n2 = makeNode("n2", "10.0.0.1");
  w.backend.instances.push(
    makeInstance(n1, "web", { id: "a", port: 80 }),
    makeInstance(n1, "web", { id: "b", port: 80 }), // same node, address and port: a duplicate
    makeInstance(n1, "web", { id: "c", port: 81 }),
    makeInstance(n1, "web", { id: "d", address: "10.0.0.1", port: 80 }), // same port, but a service address
    makeInstance(n2, "web", { id: "e", port: 80 }), // same address and port, other node
  );
  const a = await w.ask("web.service.consul.", "SRV");
  assert.deepEqual(srvs(a).map((s) => `${s.port} ${s.target}`).sort(), [
    "80 0a000001.addr.dc1.consul.",
    "80 n1.node.dc1.consul.",
    "80 n2.node.dc1.consul.",
    "81 n1.node.dc1.consul.",
  ]);
  assert.equal(a.additionals.filter((r) => r.type === "A").length, 4);
});

test("prepared queries answer SRV the same way", async () => {
  const w = world();
  const host = makeNode("h", "10.1.1.1");
  const nodes = [8001, 8002].map((port) => makeInstance(host, "db", { id: `db-${port}`, port }));
  w.backend.queries.set("db-q", { service: "db", nodes, ttl: "3s" });
  const a = await w.ask("db-q.query.consul.", "SRV");
  assert.deepEqual(srvs(a).map((s) => s.target), ["h.node.dc1.consul.", "h.node.dc1.consul."]);
  assert.deepEqual(rows(a.additionals), ["h.node.dc1.consul. 3 A 10.1.1.1", "h.node.dc1.consul. 3 A 10.1.1.1"]);
});

test("trimming keeps each kept SRV record's own additional records, and every kept SRV record matched", async () => {
  for (const seed of seeds(8)) {
    const rng = new Rng(seed);
    const w = world({ enableTruncate: true, udpAnswerLimit: 3 }, seed);
    const hosts = Array.from({ length: 1 + rng.int(4) }, (_, i) => makeNode(`host-with-a-longish-name-${i}`, `10.9.0.${i + 1}`, rng.chance(0.5) ? { rack: `r${i}` } : {}));
    const count = 2 + rng.int(60);
    for (let i = 0; i < count; i++) {
      const node = hosts[rng.int(hosts.length)]!;
      const address = rng.chance(0.3) ? node.address : rng.chance(0.2) ? `fd00::${i + 1}` : "";
      w.backend.instances.push(makeInstance(node, "web", { id: `web-${i}`, address, port: 20_000 + i }));
    }
    const q = { name: "_web._tcp.service.consul.", type: "SRV" };
    for (const options of [
      { transport: "udp", ednsSize: undefined },
      { transport: "udp", ednsSize: 512 },
      { transport: "udp", ednsSize: 1232 },
      { transport: "udp", ednsSize: 8192 },
      { transport: "tcp", ednsSize: undefined },
    ] as const) {
      const a = await w.resolver.resolve(q, options);
      const what = `seed ${seed}, ${count} instances, ${options.transport} ${options.ednsSize ?? "no EDNS"}`;
      assert.ok(a.answers.length >= 1, what);
      if (options.transport === "udp") assert.ok(messageSize(q, a, options.ednsSize !== undefined) <= (options.ednsSize ?? 512), what);
      assert.equal(a.additionalsPerAnswer?.length, a.answers.length, what);
      assert.equal(a.additionalsPerAnswer!.reduce((s, n) => s + n, 0), a.additionals.length, what);
      assert.ok(haproxyMatch(a.answers, a.additionals).every((ip) => ip !== undefined), `${what}: every SRV record has an address`);
      // Through the wire format too: dns-packet keeps the duplicates.
      const decoded = dnsPacket.decode(dnsPacket.encode({
        type: "response",
        questions: [{ name: q.name, type: "SRV" }],
        answers: a.answers as dnsPacket.Answer[],
        additionals: a.additionals as dnsPacket.Answer[],
      }));
      assert.equal(decoded.additionals?.length, a.additionals.length, what);
    }
  }
});

test("UDP without EDNS0: udp_answer_limit SRV records with exactly their A records", async () => {
  const w = world({ udpAnswerLimit: 3 });
  const host = makeNode("h", "127.0.0.1");
  for (let port = 8001; port <= 8010; port++) w.backend.instances.push(makeInstance(host, "web", { id: `w${port}`, port }));
  const a = await w.ask("web.service.consul.", "SRV", { transport: "udp" });
  assert.equal(a.answers.length, 3);
  assert.deepEqual(rows(a.additionals), [0, 1, 2].map(() => "h.node.dc1.consul. 0 A 127.0.0.1"));
  assert.deepEqual(a.additionalsPerAnswer, [1, 1, 1]);
});

function hostWorld(recurse?: (name: string) => Promise<DnsRecord[]>) {
  const backend = new FakeBackend();
  backend.index = 7;
  const asked: string[] = [];
  const resolver = createDnsResolver({
    backend,
    config: testConfig({ serviceTtlMs: { "*": 6_000 } }),
    rng: new Rng(3),
    wallNow: () => 1_700_000_000_000,
    recurse: recurse && (async (name) => {
      asked.push(name);
      return recurse(name);
    }),
  });
  return { backend, asked, ask: (name: string, type: string) => resolver.resolve({ name, type }, { transport: "udp", ednsSize: 8192 }) };
}

test("hostname targets: resolved at the recursors once per name, one group per SRV record, service TTL (Consul resolveCNAME)", async () => {
  const w = hostWorld(async (name) => [{ name, type: "A", class: "IN", ttl: 300, data: "192.0.2.10" }]);
  const host = makeNode("h", "10.0.0.1");
  for (const port of [7001, 7002, 7003]) w.backend.instances.push(makeInstance(host, "ext", { id: `ext-${port}`, address: "Backends.Example.com", port }));
  const a = await w.ask("_ext._tcp.service.consul.", "SRV");
  assert.ok(srvs(a).every((s) => s.target === "backends.example.com."), JSON.stringify(srvs(a)));
  assert.deepEqual(rows(a.additionals), [0, 1, 2].map(() => "backends.example.com. 6 A 192.0.2.10"));
  assert.deepEqual(haproxyMatch(a.answers, a.additionals), ["192.0.2.10", "192.0.2.10", "192.0.2.10"]);
  assert.deepEqual(w.asked, ["backends.example.com."]);
  assert.equal(a.index, undefined, "records from a recursor are not the catalog's: the encoding is not reused");
  const plain = await w.ask("ext.service.consul.", "A");
  assert.deepEqual(w.asked, ["backends.example.com."], "A questions answer a CNAME, as before: nothing resolved");
  assert.equal(plain.answers[0]?.type, "CNAME");
});

test("hostname targets: without recursors, or when they fail, the target alone (the client resolves it)", async () => {
  for (const recurse of [undefined, async (): Promise<DnsRecord[]> => { throw new Error("recursor down"); }]) {
    const w = hostWorld(recurse);
    w.backend.instances.push(makeInstance(makeNode("ext-node", "db.example.com"), "db", { port: 5432 }));
    const a = await w.ask("db.service.consul.", "SRV");
    assert.equal(a.rcode, "NOERROR");
    assert.deepEqual(srvs(a).map((s) => s.target), ["db.example.com."]);
    assert.deepEqual(a.additionals, []);
    assert.equal(a.index, recurse ? undefined : 7);
  }
});

test("hostname targets in our own domains are resolved through ourselves, without the recursors", async () => {
  const w = hostWorld(async () => assert.fail("our own names never go to the recursors"));
  const n9 = makeNode("n9", "10.0.0.9", { rack: "r9" });
  w.backend.nodes.push(n9);
  w.backend.instances.push(
    makeInstance(makeNode("h", "10.0.0.1"), "web", { id: "w1", address: "n9.node.consul", port: 81 }),
    makeInstance(makeNode("h", "10.0.0.1"), "web", { id: "w2", address: "db.service.consul", port: 82 }),
    makeInstance(makeNode("d", "10.0.0.20"), "db", { port: 5432 }),
    // Two services that name each other end in a CNAME, not a loop.
    makeInstance(makeNode("h", "10.0.0.1"), "ping", { address: "pong.service.consul", port: 1 }),
    makeInstance(makeNode("h", "10.0.0.1"), "pong", { address: "ping.service.consul", port: 2 }),
  );
  const a = await w.ask("web.service.consul.", "SRV");
  const byTarget = new Map(srvs(a).map((s) => [s.target, s.port]));
  assert.deepEqual([...byTarget.keys()].sort(), ["db.service.consul.", "n9.node.consul."]);
  const extras = rows(a.additionals).filter((r) => !r.includes("TXT")).sort();
  assert.deepEqual(extras, ["db.service.consul. 6 A 10.0.0.20", "n9.node.consul. 6 A 10.0.0.9"], "address records only, service TTL");
  const ping = await w.ask("ping.service.consul.", "SRV");
  assert.deepEqual(srvs(ping).map((s) => s.target), ["pong.service.consul."]);
  assert.deepEqual(rows(ping.additionals), ["pong.service.consul. 6 CNAME ping.service.consul."]);
});
