import { test } from "node:test";
import assert from "node:assert/strict";
import * as dnsPacket from "dns-packet";
import { compressMessage } from "./compress.ts";

function srvAnswer(): Uint8Array {
  return dnsPacket.encode({
    type: "response",
    id: 7,
    flags: dnsPacket.AUTHORITATIVE_ANSWER,
    questions: [{ type: "SRV", name: "web.service.consul" }],
    answers: [1, 2, 3].map((i) => ({ type: "SRV" as const, name: "web.service.consul", ttl: 0, data: { priority: 1, weight: 1, port: 8000 + i, target: `node${i}.node.dc1.consul` } })),
    authorities: [{ type: "SOA", name: "consul", ttl: 0, data: { mname: "ns.consul", rname: "hostmaster.consul", serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: 0 } }],
    additionals: [
      ...[1, 2, 3].map((i) => ({ type: "A" as const, name: `node${i}.node.dc1.consul`, ttl: 0, data: `10.0.0.${i}` })),
      { type: "TXT", name: "node1.node.dc1.consul", ttl: 0, data: ["rack=r1"] },
      { type: "CNAME", name: "alias.service.consul", ttl: 0, data: "web.service.consul" },
      { type: "MX", name: "web.service.consul", ttl: 0, data: { preference: 10, exchange: "node1.node.dc1.consul" } },
    ],
  });
}

test("compressMessage: repeated names become pointers; the message decodes to the same records", () => {
  const raw = srvAnswer();
  const packed = compressMessage(raw);
  assert.ok(packed.length < raw.length * 0.7, `${packed.length} vs ${raw.length} bytes`);
  assert.deepEqual(dnsPacket.decode(Buffer.from(packed)), dnsPacket.decode(Buffer.from(raw)));
  // The first answer's owner name is a pointer to the question's name (offset 12).
  const firstAnswer = 12 + raw.subarray(12).indexOf(0) + 1 + 4;
  assert.deepEqual([...packed.subarray(firstAnswer, firstAnswer + 2)], [0xc0, 12]);
});

test("compressMessage: SRV targets are written in full (RFC 2782) but later names point into them", () => {
  const raw = srvAnswer();
  const packed = compressMessage(raw);
  const text = Buffer.from(packed).toString("latin1");
  for (const i of [1, 2, 3]) assert.ok(text.includes(`\u0005node${i}\u0004node\u0003dc1\u0006consul\u0000`), `node${i} target in full`);
  // Each A record owner name is only a pointer: the node names appear once each.
  for (const i of [1, 2, 3]) assert.equal(text.split(`node${i}`).length - 1, 1);
});

test("compressMessage: leaves alone what it cannot parse, and messages already compressed", () => {
  const raw = srvAnswer();
  const cut = raw.subarray(0, raw.length - 5);
  assert.equal(compressMessage(cut), cut);
  const once = compressMessage(raw);
  assert.equal(compressMessage(once), once, "a pointer in the input: unchanged");
  assert.equal(compressMessage(new Uint8Array(5)).length, 5);
  const single = dnsPacket.encode({ type: "response", id: 1, questions: [{ type: "A", name: "a.b" }] });
  assert.equal(compressMessage(single), single, "nothing to share: the same bytes");
});

test("compressMessage: names are matched byte for byte, so a different case stays as written", () => {
  const raw = dnsPacket.encode({
    type: "response",
    id: 2,
    questions: [{ type: "A", name: "Web.Service.Consul" }],
    answers: [{ type: "A", name: "web.service.consul", ttl: 0, data: "10.0.0.1" }],
  });
  const decoded = dnsPacket.decode(Buffer.from(compressMessage(raw)));
  assert.equal(decoded.questions![0]!.name, "Web.Service.Consul");
  assert.equal(decoded.answers![0]!.name, "web.service.consul");
});
