import { test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as dnsPacket from "dns-packet";
import { Rng, seeds } from "../sim/rng.ts";
import { parseQuery, typeName } from "./query.ts";

function encode(name: string, type: dnsPacket.RecordType, edns?: number, id = 99): Uint8Array {
  return dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name, type, class: "IN" }],
    additionals: edns ? [{ type: "OPT", name: ".", udpPayloadSize: edns, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [{ code: 10, data: Buffer.alloc(8) }] } as unknown as dnsPacket.Answer] : [],
  });
}

test("parseQuery reads what dns-packet writes: name, type, class, id, flags, EDNS0 size", () => {
  const q = parseQuery(encode("Web.Service.consul", "SRV", 1232, 0xbeef))!;
  assert.deepEqual(q, { id: 0xbeef, flags: 0x0100, name: "Web.Service.consul", qtype: 33, qclass: 1, ednsSize: 1232 });
  assert.equal(parseQuery(encode("a.b", "A"))!.ednsSize, undefined);
  assert.equal(parseQuery(encode("a.b", "A", 100))!.ednsSize, 512, "sizes below 512 count as 512");
  assert.equal(typeName(33), "SRV");
  assert.equal(typeName(65280), "UNKNOWN_65280");
});

test("parseQuery declines anything unusual (the server then uses dns-packet), and never throws on junk", () => {
  const two = dnsPacket.encode({ type: "query", id: 1, questions: [{ name: "a", type: "A" }, { name: "b", type: "A" }] });
  assert.equal(parseQuery(two), undefined);
  const withTrailing = new Uint8Array([...encode("a.b", "A"), 0]);
  assert.equal(parseQuery(withTrailing), undefined);
  const pointer = new Uint8Array(encode("a.b", "A"));
  pointer[12] = 0xc0;
  assert.equal(parseQuery(pointer), undefined);
  const escaped = encode("a\\.b.c", "A");
  assert.ok(parseQuery(escaped) === undefined || !parseQuery(escaped)!.name.includes("\\"));
  for (const seed of seeds(3)) {
    const rng = new Rng(seed);
    for (let i = 0; i < 2_000; i++) {
      const junk = new Uint8Array(rng.range(0, 80));
      for (let j = 0; j < junk.length; j++) junk[j] = rng.int(256);
      if (junk.length > 5) { junk[4] = 0; junk[5] = 1; junk[6] = junk[7] = junk[8] = junk[9] = 0; }
      const r = parseQuery(junk);
      if (r) assert.ok(r.name.length <= 253, `seed ${seed}`);
    }
  }
});
