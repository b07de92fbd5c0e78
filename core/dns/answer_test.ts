import { test } from "node:test";
import assert from "node:assert/strict";
import * as dnsPacket from "dns-packet";
import { Rng, seeds } from "../sim/rng.ts";
import { fitAnswer, messageSize, serviceTtlMs, type DnsAnswer, type DnsAnswerConfig, type DnsRecord } from "./answer.ts";
import { createDnsResolver, type DnsResolveOptions } from "./driver.ts";
import { FakeBackend, makeCheck, makeInstance, makeNode, testConfig } from "./_fake_backend.ts";

const nowMs = 1_700_000_000_123;

function world(config: Partial<DnsAnswerConfig> = {}, seed = 1) {
  const backend = new FakeBackend();
  const resolver = createDnsResolver({ backend, config: testConfig(config), rng: new Rng(seed), wallNow: () => nowMs });
  const ask = (name: string, type: string, options: DnsResolveOptions = { transport: "tcp" }) =>
    resolver.resolve({ name, type }, options);
  return { backend, resolver, ask };
}

function datas(records: DnsRecord[], type?: string): unknown[] {
  return records.filter((r) => !type || r.type === type).map((r) => r.data);
}

function assertSoa(a: DnsAnswer, domain = "consul.") {
  assert.equal(a.authorities.length, 1, "one SOA in authority");
  const soa = a.authorities[0]!;
  assert.equal(soa.type, "SOA");
  assert.equal(soa.name, domain);
  if (soa.type === "SOA") {
    assert.equal(soa.data.mname, `ns.${domain}`);
    assert.equal(soa.data.rname, `hostmaster.${domain}`);
    assert.equal(soa.data.serial, Math.floor(nowMs / 1000));
  }
}

test("node lookup: A from the address, TXT from meta, any case, with or without the datacenter", async () => {
  const w = world({ nodeTtlMs: 30_000 });
  w.backend.nodes.push(makeNode("foo", "10.1.2.3", { rack: "r1", "rfc1035-x": "raw" }));
  for (const name of ["foo.node.consul.", "FOO.Node.dc1.CONSUL", "foo.node.dc1.consul."]) {
    const a = await w.ask(name, "A");
    assert.equal(a.rcode, "NOERROR", name);
    assert.equal(a.authoritative, true);
    assert.deepEqual(datas(a.answers), ["10.1.2.3"], name);
    assert.equal(a.answers[0]!.name, name, "answers echo the question's name");
    assert.equal(a.answers[0]!.ttl, 30);
    assert.deepEqual(datas(a.additionals, "TXT"), [["rack=r1"], ["raw"]], "meta rides along as additional TXT");
  }
  const txt = await w.ask("foo.node.consul.", "TXT");
  assert.deepEqual(datas(txt.answers), [["rack=r1"], ["raw"]]);
  const aaaa = await w.ask("foo.node.consul.", "AAAA");
  assert.equal(aaaa.rcode, "NOERROR", "known name, wrong type: NOERROR");
  assert.equal(aaaa.answers.length, 0);
  assertSoa(aaaa);
});

test("node lookup: IPv6 address answers AAAA; hostname answers CNAME; unknown node is NXDOMAIN with SOA", async () => {
  const w = world();
  w.backend.nodes.push(makeNode("six", "2001:db8::0001"), makeNode("named", "db.example.com"));
  const aaaa = await w.ask("six.node.consul.", "AAAA");
  assert.deepEqual(datas(aaaa.answers), ["2001:db8::1"]);
  assert.equal((await w.ask("six.node.consul.", "A")).answers.length, 0);
  const cname = await w.ask("named.node.consul.", "A");
  assert.deepEqual(cname.answers.map((r) => [r.type, r.data]), [["CNAME", "db.example.com."]]);
  const nx = await w.ask("nope.node.consul.", "A");
  assert.equal(nx.rcode, "NXDOMAIN");
  assertSoa(nx);
  const otherDc = await w.ask("six.node.dc9.consul.", "AAAA");
  assert.equal(otherDc.rcode, "NXDOMAIN", "unknown datacenter");
});

test("service lookup: healthy instances only; critical node or service check removes, warning stays unless only_passing", async () => {
  for (const onlyPassing of [false, true]) {
    const w = world({ onlyPassing });
    const n1 = makeNode("n1", "10.0.0.1"), n2 = makeNode("n2", "10.0.0.2"), n3 = makeNode("n3", "10.0.0.3"), n4 = makeNode("n4", "10.0.0.4");
    w.backend.nodes.push(n1, n2, n3, n4);
    w.backend.instances.push(
      makeInstance(n1, "web", { checks: ["passing"] }),
      makeInstance(n2, "web", { checks: ["passing", "critical"] }),
      makeInstance(n3, "web", { checks: ["warning"] }),
      makeInstance(n4, "web"),
    );
    // A node-level critical check also removes the instance.
    w.backend.instances[3]!.checks.push(makeCheck("n4", "critical", ""));
    const a = await w.ask("web.service.consul.", "A", { transport: "tcp" });
    const got = (datas(a.answers) as string[]).sort();
    assert.deepEqual(got, onlyPassing ? ["10.0.0.1"] : ["10.0.0.1", "10.0.0.3"], `onlyPassing=${onlyPassing}`);
  }
});

test("service lookup: all instances unhealthy or no such service is NXDOMAIN with SOA; wrong type is NOERROR with SOA", async () => {
  const w = world();
  const n1 = makeNode("n1", "10.0.0.1");
  w.backend.instances.push(makeInstance(n1, "down", { checks: ["critical"] }), makeInstance(n1, "up"));
  for (const name of ["down.service.consul.", "missing.service.consul."]) {
    const a = await w.ask(name, "A");
    assert.equal(a.rcode, "NXDOMAIN", name);
    assertSoa(a);
  }
  const mx = await w.ask("up.service.consul.", "MX");
  assert.equal(mx.rcode, "NOERROR");
  assert.equal(mx.answers.length, 0);
  assertSoa(mx);
  const unknownType = await w.ask("up.service.consul.", "UNKNOWN_65280");
  assert.equal(unknownType.rcode, "NOERROR");
  assertSoa(unknownType);
});

test("service lookup: tag, RFC 2782 forms and datacenter", async () => {
  const w = world();
  const n1 = makeNode("n1", "10.0.0.1"), n2 = makeNode("n2", "10.0.0.2");
  w.backend.instances.push(
    makeInstance(n1, "db", { tags: ["primary"], port: 5432 }),
    makeInstance(n2, "db", { tags: ["replica"], port: 5433 }),
  );
  const tagA = await w.ask("primary.db.service.consul.", "A");
  assert.deepEqual(datas(tagA.answers), ["10.0.0.1"]);
  const tagDc = await w.ask("replica.db.service.dc1.consul.", "A");
  assert.deepEqual(datas(tagDc.answers), ["10.0.0.2"]);
  for (const name of ["_db._primary.service.consul.", "_db._primary.service.dc1.consul.", "_db._primary.consul.", "_db._primary.dc1.consul."]) {
    const srv = await w.ask(name, "SRV");
    assert.equal(srv.rcode, "NOERROR", name);
    assert.deepEqual(srv.answers.map((r) => r.type === "SRV" ? r.data.port : 0), [5432], name);
  }
  const tcp = await w.ask("_db._tcp.service.consul.", "SRV");
  assert.deepEqual(tcp.answers.map((r) => r.type === "SRV" ? r.data.port : 0).sort(), [5432, 5433], "_tcp means any tag");
  const nx = await w.ask("nosuchtag.db.service.consul.", "A");
  assert.equal(nx.rcode, "NXDOMAIN");
});

test("SRV: node targets with A glue, .addr targets for a service address, weights by health", async () => {
  const w = world({ serviceTtlMs: { "*": 5_000 } });
  const n1 = makeNode("N1", "10.0.0.1", { zone: "a" }), n2 = makeNode("n2", "10.0.0.2");
  w.backend.instances.push(
    makeInstance(n1, "api", { port: 8080, weights: { passing: 10, warning: 2 } }),
    makeInstance(n2, "api", { port: 9090, address: "192.168.1.7", checks: ["warning"], weights: { passing: 10, warning: 2 } }),
  );
  const a = await w.ask("api.service.consul.", "SRV");
  const byPort = new Map(a.answers.map((r) => [r.type === "SRV" ? r.data.port : 0, r]));
  const s1 = byPort.get(8080)!, s2 = byPort.get(9090)!;
  assert.ok(s1.type === "SRV" && s2.type === "SRV");
  assert.equal(s1.data.target, "n1.node.dc1.consul.");
  assert.equal(s1.data.weight, 10);
  assert.equal(s1.data.priority, 1);
  assert.equal(s1.ttl, 5);
  assert.equal(s2.data.target, "c0a80107.addr.dc1.consul.");
  assert.equal(s2.data.weight, 2, "warning weight");
  const glue = new Map(a.additionals.filter((r) => r.type === "A").map((r) => [r.name, r.data]));
  assert.equal(glue.get("n1.node.dc1.consul."), "10.0.0.1");
  assert.equal(glue.get("c0a80107.addr.dc1.consul."), "192.168.1.7");
  assert.deepEqual(datas(a.additionals, "TXT"), [["zone=a"]]);
  // A for the service prefers the service address.
  const aRecs = (datas((await w.ask("api.service.consul.", "A")).answers) as string[]).sort();
  assert.deepEqual(aRecs, ["10.0.0.1", "192.168.1.7"]);
});

test("service TTL: exact name beats the longest prefix wildcard, * is the fallback", () => {
  const table = { "*": 1_000, "web*": 2_000, "web-api*": 3_000, "web-api-v2": 4_000 };
  assert.equal(serviceTtlMs("db", table), 1_000);
  assert.equal(serviceTtlMs("web", table), 2_000);
  assert.equal(serviceTtlMs("web-api-v1", table), 3_000);
  assert.equal(serviceTtlMs("web-api-v2", table), 4_000);
  assert.equal(serviceTtlMs("db", {}), 0);
});

test("service answers are shuffled by the injected Rng: same seed same order, orders vary", async () => {
  const orders = new Set<string>();
  const list = seeds(20);
  for (const seed of list) {
    const run = async () => {
      const w = world({}, seed);
      for (let i = 1; i <= 6; i++) w.backend.instances.push(makeInstance(makeNode(`n${i}`, `10.0.0.${i}`), "web"));
      return (await w.ask("web.service.consul.", "A")).answers.map((r) => r.data).join(",");
    };
    const first = await run();
    assert.equal(await run(), first, `seed ${seed} replays`);
    orders.add(first);
  }
  if (list.length >= 10) assert.ok(orders.size > 5, `orders vary across seeds (${orders.size})`);
});

test("addr lookups: IPv4 and IPv6 hex, bad hex is NXDOMAIN", async () => {
  const w = world();
  assert.deepEqual(datas((await w.ask("7f000001.addr.dc1.consul.", "A")).answers), ["127.0.0.1"]);
  assert.deepEqual(datas((await w.ask("20010db8000000000000000000000001.addr.dc1.consul.", "AAAA")).answers), ["2001:db8::1"]);
  const wrong = await w.ask("7f000001.addr.dc1.consul.", "AAAA");
  assert.equal(wrong.rcode, "NOERROR");
  assertSoa(wrong);
  assert.equal((await w.ask("zz000001.addr.consul.", "A")).rcode, "NXDOMAIN");
  assert.equal((await w.ask("7f0001.addr.consul.", "A")).rcode, "NXDOMAIN");
});

test("apex: SOA with dns_config.soa values and NS in authority; NS lists servers with glue; other types empty with SOA", async () => {
  const w = world({ soa: { refresh: 10, retry: 20, expire: 30, min: 40 } });
  const s1 = makeNode("server1", "10.0.0.9");
  w.backend.instances.push(makeInstance(s1, "consul", { port: 8300 }));
  const soa = await w.ask("consul.", "SOA");
  assert.equal(soa.answers[0]!.type, "SOA");
  assert.deepEqual(soa.answers[0]!.data, { mname: "ns.consul.", rname: "hostmaster.consul.", serial: Math.floor(nowMs / 1000), refresh: 10, retry: 20, expire: 30, minimum: 40 });
  assert.equal(soa.answers[0]!.ttl, 40);
  assert.deepEqual(datas(soa.authorities, "NS"), ["server1.node.dc1.consul."]);
  const ns = await w.ask("CONSUL.", "NS");
  assert.deepEqual(datas(ns.answers), ["server1.node.dc1.consul."]);
  assert.deepEqual(ns.additionals.map((r) => [r.name, r.data]), [["server1.node.dc1.consul.", "10.0.0.9"]]);
  const a = await w.ask("consul.", "A");
  assert.equal(a.rcode, "NOERROR");
  assert.equal(a.answers.length, 0);
  assertSoa(a);
  const servers = await w.ask("consul.service.consul.", "SRV");
  assert.deepEqual(servers.answers.map((r) => r.type === "SRV" ? r.data.port : 0), [8300]);
});

test("names we do not serve under the domain are NXDOMAIN; outside the domain: REFUSED, or forward with recursors", async () => {
  const w = world();
  for (const name of ["foo.consul.", "x.query.consul.", "a.b.node.dc1.extra.consul.", "node.consul."]) {
    const a = await w.ask(name, "A");
    assert.equal(a.rcode, "NXDOMAIN", name);
    assertSoa(a);
  }
  const out = await w.ask("example.com.", "A");
  assert.equal(out.rcode, "REFUSED");
  assert.equal(out.forward, false);
  const f = world({ hasRecursors: true });
  const fwd = await f.ask("example.com.", "A");
  assert.equal(fwd.forward, true);
  assert.equal(f.backend.calls, 0, "forwarded names do not touch the catalog");
});

test("alt domain answers too, with its own SOA and SRV targets", async () => {
  const w = world({ altDomain: "cairn." });
  const n1 = makeNode("n1", "10.0.0.1");
  w.backend.nodes.push(n1);
  w.backend.instances.push(makeInstance(n1, "web"));
  assert.deepEqual(datas((await w.ask("n1.node.cairn.", "A")).answers), ["10.0.0.1"]);
  const srv = await w.ask("web.service.cairn.", "SRV");
  assert.ok(srv.answers[0]!.type === "SRV" && srv.answers[0]!.data.target === "n1.node.dc1.cairn.");
  assertSoa(await w.ask("nope.node.cairn.", "A"), "cairn.");
});

test("PTR: node address first, then service address; unknown is NXDOMAIN or forwarded", async () => {
  const w = world();
  const n1 = makeNode("n1", "10.0.0.1");
  w.backend.nodes.push(n1);
  w.backend.instances.push(makeInstance(n1, "web", { address: "10.0.0.50" }));
  assert.deepEqual(datas((await w.ask("1.0.0.10.in-addr.arpa.", "PTR")).answers), ["n1.node.dc1.consul."]);
  assert.deepEqual(datas((await w.ask("50.0.0.10.in-addr.arpa.", "PTR")).answers), ["web.service.consul."]);
  const nx = await w.ask("9.9.9.10.in-addr.arpa.", "PTR");
  assert.equal(nx.rcode, "NXDOMAIN");
  const f = world({ hasRecursors: true });
  assert.equal((await f.ask("9.9.9.10.in-addr.arpa.", "PTR")).forward, true);
  const v6 = world();
  v6.backend.nodes.push(makeNode("six", "2001:db8::1"));
  const name = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.";
  assert.deepEqual(datas((await v6.ask(name, "PTR")).answers), ["six.node.dc1.consul."]);
});

test("a lookup failure is SERVFAIL, not a throw", async () => {
  const w = world();
  w.backend.fail = true;
  assert.equal((await w.ask("web.service.consul.", "A")).rcode, "SERVFAIL");
});

function manyInstances(w: ReturnType<typeof world>, n: number, service = "web") {
  for (let i = 1; i <= n; i++) {
    const node = makeNode(`node-with-a-longish-name-${i}`, `10.0.${i >> 8}.${i & 255}`);
    w.backend.instances.push(makeInstance(node, service, { port: 1000 + i }));
  }
}

test("UDP without EDNS: at most udp_answer_limit records; TC only with enable_truncate; TCP gets all", async () => {
  for (const enableTruncate of [false, true]) {
    const w = world({ enableTruncate });
    manyInstances(w, 10);
    const udp = await w.ask("web.service.consul.", "A", { transport: "udp" });
    assert.equal(udp.answers.length, 3);
    assert.equal(udp.truncated, enableTruncate);
    const srv = await w.ask("web.service.consul.", "SRV", { transport: "udp" });
    assert.equal(srv.answers.length, 3);
    const targets = new Set(srv.answers.map((r) => r.type === "SRV" ? r.data.target : ""));
    assert.ok(srv.additionals.every((r) => targets.has(r.name)), "glue follows the kept answers");
    assert.equal(srv.additionals.length, 3);
    const tcp = await w.ask("web.service.consul.", "A", { transport: "tcp" });
    assert.equal(tcp.answers.length, 10);
    assert.equal(tcp.truncated, false);
  }
  const w = world({ udpAnswerLimit: 5 });
  manyInstances(w, 10);
  assert.equal((await w.ask("web.service.consul.", "A", { transport: "udp" })).answers.length, 5);
});

test("UDP sizes: answers fit 512 bytes, or the client's EDNS0 size, whatever the record count", async () => {
  for (const seed of seeds(5)) {
    const w = world({ enableTruncate: true, udpAnswerLimit: 100 }, seed);
    manyInstances(w, 200);
    const q = { name: "web.service.consul.", type: "SRV" };
    for (const ednsSize of [undefined, 1232, 4096]) {
      const a = await w.resolver.resolve(q, { transport: "udp", ednsSize });
      const limit = ednsSize ?? 512;
      const size = messageSize(q, a, ednsSize !== undefined);
      assert.ok(size <= limit, `seed ${seed}: ${size} > ${limit}`);
      assert.ok(a.answers.length >= 1 && a.answers.length < 200, `seed ${seed}: trimmed`);
      assert.equal(a.truncated, true);
      // One more answer (with its glue) would not have fit.
      assert.ok(size + 2 * 40 > limit - 60, `seed ${seed} size ${ednsSize}: not trimmed too far (${size})`);
    }
    const big = await w.resolver.resolve(q, { transport: "udp", ednsSize: 65000 });
    assert.equal(big.answers.length, 200, `seed ${seed}: a large EDNS0 size fits them all`);
    assert.equal(big.truncated, false);
  }
});

test("a_record_limit caps A answers on every transport", async () => {
  const w = world({ aRecordLimit: 2 });
  manyInstances(w, 10);
  assert.equal((await w.ask("web.service.consul.", "A", { transport: "tcp" })).answers.length, 2);
  assert.equal((await w.ask("web.service.consul.", "SRV", { transport: "tcp" })).answers.length, 10);
});

test("computed sizes equal dns-packet's encoded sizes for every record shape", () => {
  const question = { name: "Web.service.consul.", type: "SRV" };
  const answer: DnsAnswer = {
    rcode: "NOERROR",
    authoritative: true,
    truncated: false,
    forward: false,
    answers: [
      { name: "Web.service.consul.", type: "SRV", class: "IN", ttl: 5, data: { priority: 1, weight: 1, port: 80, target: "n1.node.dc1.consul." } },
      { name: "a.consul.", type: "A", class: "IN", ttl: 0, data: "10.0.0.1" },
      { name: "a.consul.", type: "AAAA", class: "IN", ttl: 0, data: "2001:db8::1" },
      { name: "a.consul.", type: "CNAME", class: "IN", ttl: 0, data: "x.example." },
      { name: "a.consul.", type: "TXT", class: "IN", ttl: 0, data: ["k=v", "é", "x".repeat(255)] },
    ],
    authorities: [
      { name: "consul.", type: "SOA", class: "IN", ttl: 0, data: { mname: "ns.consul.", rname: "hostmaster.consul.", serial: 1, refresh: 2, retry: 3, expire: 4, minimum: 5 } },
      { name: "consul.", type: "NS", class: "IN", ttl: 0, data: "s.node.dc1.consul." },
    ],
    additionals: [{ name: "1.0.0.10.in-addr.arpa.", type: "PTR", class: "IN", ttl: 0, data: "n1.node.dc1.consul." }],
  };
  for (const withOpt of [false, true]) {
    const computed = messageSize(question, answer, withOpt);
    const packet: dnsPacket.Packet = {
      type: "response",
      id: 1,
      questions: [{ name: question.name, type: "SRV", class: "IN" }],
      answers: answer.answers as dnsPacket.Answer[],
      authorities: answer.authorities as dnsPacket.Answer[],
      additionals: [
        ...(answer.additionals as dnsPacket.Answer[]),
        ...(withOpt ? [{ type: "OPT", name: ".", udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as dnsPacket.Answer] : []),
      ],
    };
    // dns-packet turns TXT strings into Buffers in place: encode a copy.
    assert.equal(computed, dnsPacket.encode(structuredClone(packet)).length, `opt=${withOpt}`);
  }
});

test("fitAnswer: a single record too big for UDP leaves an empty truncated answer", () => {
  const question = { name: "n.node.consul.", type: "TXT" };
  const answers: DnsRecord[] = [{ name: question.name, type: "TXT", class: "IN", ttl: 0, data: Array.from({ length: 4 }, () => "x".repeat(200)) }];
  const a = fitAnswer(question, { rcode: "NOERROR", authoritative: true, truncated: false, forward: false, answers, authorities: [], additionals: [] }, {
    transport: "udp",
    config: { udpAnswerLimit: 3, enableTruncate: false },
  });
  assert.equal(a.answers.length, 0);
  assert.equal(a.truncated, true);
  const tcp = fitAnswer(question, { rcode: "NOERROR", authoritative: true, truncated: false, forward: false, answers, authorities: [], additionals: [] }, {
    transport: "tcp",
    config: { udpAnswerLimit: 3, enableTruncate: false },
  });
  assert.equal(tcp.answers.length, 1);
});

test("enable_additional_node_meta_txt = false: no meta TXT in the additional section (node A, service SRV), still in TXT answers", async () => {
  const w = world({ enableAdditionalNodeMetaTxt: false });
  const foo = makeNode("foo", "10.1.2.3", { rack: "r1" });
  w.backend.nodes.push(foo);
  w.backend.instances.push(makeInstance(foo, "web", { port: 80 }));
  const a = await w.ask("foo.node.consul.", "A");
  assert.deepEqual(datas(a.answers), ["10.1.2.3"]);
  assert.deepEqual(datas(a.additionals, "TXT"), [], "no meta in additionals");
  const txt = await w.ask("foo.node.consul.", "TXT");
  assert.deepEqual(datas(txt.answers), [["rack=r1"]], "a TXT question still gets the meta");
  const srv = await w.ask("web.service.consul.", "SRV");
  assert.equal(srv.answers.length, 1);
  assert.deepEqual(datas(srv.additionals, "TXT"), [], "no meta after SRV");
  assert.equal(datas(srv.additionals, "A").length, 1, "the target's A record stays");

  const on = world();
  on.backend.instances.push(makeInstance(makeNode("foo", "10.1.2.3", { rack: "r1" }), "web", { port: 80 }));
  assert.deepEqual(datas((await on.ask("web.service.consul.", "SRV")).additionals, "TXT"), [["rack=r1"]], "default: meta after SRV");
});

test("other datacenters: <dc>.dc forms; translate_wan_addrs answers a remote datacenter with the wan tagged addresses, the local one as is", async () => {
  for (const translate of [false, true]) {
    const w = world({ translateWanAddrs: translate });
    w.backend.datacenters = ["dc1", "dc2"];
    const remote = { ...makeNode("r1", "10.2.0.1", {}, "dc2"), taggedAddresses: { lan: "10.2.0.1", wan: "198.51.100.1" } };
    const local = { ...makeNode("l1", "10.1.0.1"), taggedAddresses: { lan: "10.1.0.1", wan: "203.0.113.1" } };
    w.backend.nodes.push(remote, local);
    const svc = makeInstance(remote, "db", { address: "10.2.0.5", port: 5432 });
    svc.service.taggedAddresses = { wan: { address: "198.51.100.5", port: 5432 } };
    w.backend.instances.push(makeInstance(remote, "web"), svc, makeInstance(local, "web"));
    for (const name of ["web.service.dc2.consul.", "web.service.dc2.dc.consul."]) {
      assert.deepEqual(datas((await w.ask(name, "A")).answers), [translate ? "198.51.100.1" : "10.2.0.1"], name);
    }
    assert.deepEqual(datas((await w.ask("web.service.consul.", "A")).answers), ["10.1.0.1"], "the local datacenter is never translated");
    assert.deepEqual(datas((await w.ask("db.service.dc2.dc.consul.", "A")).answers), [translate ? "198.51.100.5" : "10.2.0.5"]);
    const srv = await w.ask("web.service.dc2.consul.", "SRV");
    assert.deepEqual(datas(srv.additionals, "A"), [translate ? "198.51.100.1" : "10.2.0.1"]);
    for (const name of ["r1.node.dc2.consul.", "r1.node.dc2.dc.consul."]) {
      assert.deepEqual(datas((await w.ask(name, "A")).answers), [translate ? "198.51.100.1" : "10.2.0.1"], name);
    }
    assert.equal((await w.ask("web.service.dc9.consul.", "A")).rcode, "NXDOMAIN");
  }
});
