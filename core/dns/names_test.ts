import { test } from "node:test";
import assert from "node:assert/strict";
import { addressToHex, addressToReverse, hexToAddress, normalizeAddress, parseIpv6, parseName, type ParsedName } from "./names.ts";

const opts = { domains: ["consul.", "alt."], datacenter: "dc1" };

test("parseName: every name form", () => {
  const table: Array<[string, ParsedName]> = [
    ["consul.", { kind: "apex", domain: "consul." }],
    ["Consul", { kind: "apex", domain: "consul." }],
    ["foo.node.consul.", { kind: "node", domain: "consul.", node: "foo", datacenter: "dc1" }],
    ["foo.node.dc2.consul.", { kind: "node", domain: "consul.", node: "foo", datacenter: "dc2" }],
    ["web.service.consul.", { kind: "service", domain: "consul.", service: "web", tag: "", datacenter: "dc1" }],
    ["v1.web.service.dc2.alt.", { kind: "service", domain: "alt.", service: "web", tag: "v1", datacenter: "dc2" }],
    ["_web._v1.service.consul.", { kind: "service", domain: "consul.", service: "web", tag: "v1", datacenter: "dc1" }],
    ["_web._tcp.service.consul.", { kind: "service", domain: "consul.", service: "web", tag: "", datacenter: "dc1" }],
    ["_web._udp.dc3.consul.", { kind: "service", domain: "consul.", service: "web", tag: "", datacenter: "dc3" }],
    ["_web._tcp.consul.", { kind: "service", domain: "consul.", service: "web", tag: "", datacenter: "dc1" }],
    ["7f000001.addr.dc1.consul.", { kind: "addr", domain: "consul.", address: "127.0.0.1", family: 4, datacenter: "dc1" }],
    ["zz.addr.consul.", { kind: "nxdomain", domain: "consul." }],
    ["foo.consul.", { kind: "nxdomain", domain: "consul." }],
    ["service.consul.", { kind: "nxdomain", domain: "consul." }],
    ["a.node.b.c.consul.", { kind: "nxdomain", domain: "consul." }],
    ["web.service.dc2.dc.consul.", { kind: "service", domain: "consul.", service: "web", tag: "", datacenter: "dc2" }],
    ["v1.web.service.dc2.dc.consul.", { kind: "service", domain: "consul.", service: "web", tag: "v1", datacenter: "dc2" }],
    ["_web._tcp.service.dc2.dc.consul.", { kind: "service", domain: "consul.", service: "web", tag: "", datacenter: "dc2" }],
    ["foo.node.dc2.dc.consul.", { kind: "node", domain: "consul.", node: "foo", datacenter: "dc2" }],
    ["web.service.dc2.ns.consul.", { kind: "nxdomain", domain: "consul." }],
    ["geo.query.dc2.dc.consul.", { kind: "nxdomain", domain: "consul." }],
    ["geo.query.consul.", { kind: "query", domain: "consul.", query: "geo", datacenter: "dc1" }],
    ["geo.db.query.dc2.consul.", { kind: "query", domain: "consul.", query: "geo.db", datacenter: "dc2" }],
    ["query.consul.", { kind: "nxdomain", domain: "consul." }],
    ["geo.web.connect.consul.", { kind: "nxdomain", domain: "consul." }],
    ["example.com.", { kind: "outside" }],
    ["notconsul.", { kind: "outside" }],
    ["4.3.2.1.in-addr.arpa.", { kind: "ptr", address: "1.2.3.4" }],
    ["3.2.1.in-addr.arpa.", { kind: "outside" }],
  ];
  for (const [name, want] of table) assert.deepEqual(parseName(name, opts), want, name);
});

test("addresses: hex, reverse names and IPv6 text forms round-trip", () => {
  assert.equal(addressToHex("10.0.0.1"), "0a000001");
  assert.equal(addressToHex("::1"), "00000000000000000000000000000001");
  assert.equal(addressToHex("db.example.com"), undefined);
  assert.deepEqual(hexToAddress("0a000001"), { address: "10.0.0.1", family: 4 });
  assert.deepEqual(hexToAddress("20010db8000000000000000000000001"), { address: "2001:db8::1", family: 6 });
  assert.equal(addressToReverse("10.0.0.1"), "1.0.0.10.in-addr.arpa.");
  const rev6 = addressToReverse("2001:db8::1")!;
  assert.deepEqual(parseName(rev6, opts), { kind: "ptr", address: "2001:db8::1" });
  assert.equal(normalizeAddress("2001:0db8:0:0:0:0:0:0001"), "2001:db8::1");
  assert.equal(normalizeAddress("::ffff:1.2.3.4"), "::ffff:102:304");
  assert.deepEqual(parseIpv6("1::2:3"), [1, 0, 0, 0, 0, 0, 2, 3]);
  for (const bad of ["1:2", "1::2::3", "12345::", ":::", "1:2:3:4:5:6:7:8:9"]) assert.equal(parseIpv6(bad), undefined, bad);
});
