// The core-values <-> bytes codec: captured Serf traffic decodes into the
// core's message values, and core values round-trip (packet and stream).

import assert from "node:assert/strict";
import { test } from "node:test";
import { fromHex, loadVectors, toHex } from "./_vectors.ts";
import { bytesWireCodec, serfWireCodec } from "./codec.ts";
import { ipToString, parseAddr, parseIp } from "./addr.ts";
import type { BytesGossipTypes, SwimMessage } from "../swim.ts";
import type { SerfTypes } from "../serf.ts";
import type { WireError } from "./messages.ts";
import { MessageType } from "./messages.ts";
import { MpWriter } from "./msgpack_go.ts";
import { encodeTags } from "./serf.ts";

function vector(file: string, i: number): Uint8Array {
  return fromHex(loadVectors(file).vectors[i].hex);
}

test("codec: captured packets decode into core messages", () => {
  const errors: WireError[] = [];
  const c = serfWireCodec({ onWireError: (e) => errors.push(e) });

  const ping = c.decode(vector("udp-ping-ack.json", 0), { stream: false });
  assert.ok(ping.ok);
  assert.deepEqual(ping.msgs, [{ type: "ping", seqNo: 1, node: "a", sourceAddr: "127.0.0.1:7947", sourceNode: "b" }]);

  const ack = c.decode(vector("udp-ping-ack.json", 1), { stream: false });
  assert.ok(ack.ok && ack.msgs[0]!.type === "ack");
  const coord = (ack.msgs[0] as Extract<SwimMessage<SerfTypes>, { type: "ack" }>).payload!;
  assert.equal(coord.vec.length, 8);
  assert.equal(coord.height, 1e-5);

  const gossip = c.decode(vector("udp-gossip-alive-compound.json", 1), { stream: false });
  assert.ok(gossip.ok);
  assert.deepEqual(gossip.msgs, [
    { type: "alive", node: "a", addr: "127.0.0.1:7946", incarnation: 1, meta: { role: "web" }, vsn: [1, 5, 2, 2, 5, 5] },
    { type: "alive", node: "b", addr: "127.0.0.1:7947", incarnation: 1, meta: {}, vsn: [1, 5, 2, 2, 5, 5] },
    { type: "user", msg: { type: "join", body: { lTime: 1, node: "b" } } },
  ]);

  const query = c.decode(vector("udp-queries.json", 0), { stream: false });
  assert.ok(query.ok);
  assert.deepEqual(query.msgs[0], {
    type: "user",
    msg: {
      type: "query",
      body: {
        lTime: 1,
        id: 1549122862,
        addr: "127.0.0.1:7947",
        sourceNode: "b",
        filters: [{ type: "tag", filter: { tag: "role", expr: "web" } }],
        flags: 1,
        relayFactor: 1,
        timeoutMs: 3000,
        name: "uptime",
        payload: new Uint8Array(Buffer.from("hello")),
      },
    },
  });

  const relay = c.decode(vector("udp-queries.json", 2), { stream: false });
  assert.ok(relay.ok);
  assert.deepEqual(relay.msgs[0], {
    type: "user",
    msg: {
      type: "relay",
      destAddr: "127.0.0.1:7947",
      destName: "b",
      inner: { lTime: 1, id: 1549122862, from: "a", flags: 1, payload: null },
    },
  });
  assert.deepEqual(errors, []);
});

test("codec: captured push/pull stream decodes with tags and Serf state", () => {
  const v = loadVectors("tcp-pushpull-uncompressed.json").vectors[1];
  const c = serfWireCodec();
  const r = c.decode(fromHex(v.serverToClient.hex), { stream: true });
  assert.ok(r.ok && r.msgs[0]!.type === "pushPull");
  const pp = r.msgs[0] as Extract<SwimMessage<SerfTypes>, { type: "pushPull" }>;
  assert.deepEqual(pp.nodes.map((n) => [n.name, n.addr, n.state, n.meta]), [
    ["b", "127.0.0.1:7967", "alive", {}],
    ["a", "127.0.0.1:7966", "alive", { role: "web", dc: "dc1" }],
  ]);
  assert.equal(pp.userState!.events.filter((e) => e !== null).length, 2);
  assert.deepEqual([...pp.userState!.statusLTimes], [["a", 0], ["b", 1]].sort() as [string, number][]);
});

test("codec: core messages round-trip through bytes, packet and stream", () => {
  const c = serfWireCodec();
  const msgs: SwimMessage<SerfTypes>[] = [
    { type: "ping", seqNo: 9, node: "n", sourceAddr: "10.0.0.1:7946", sourceNode: "m" },
    { type: "indirectPing", seqNo: 3, node: "t", target: "[2001:db8::1]:8301", nack: true, sourceAddr: "10.0.0.1:7946", sourceNode: "m" },
    { type: "ack", seqNo: 4, payload: { vec: [0, 0, 0, 0, 0, 0, 0, 0.5], error: 1.5, adjustment: 0, height: 1e-5 } },
    { type: "nack", seqNo: 5 },
    { type: "alive", node: "x", addr: "10.1.2.3:8301", incarnation: 7, meta: { role: "node", dc: "dc1" }, vsn: [1, 5, 2, 2, 5, 4] },
    { type: "suspect", node: "x", incarnation: 7, from: "y" },
    { type: "dead", node: "x", incarnation: 8, from: "x" },
    { type: "user", msg: { type: "userEvent", body: { lTime: 3, name: "deploy", payload: new Uint8Array([1, 2]), cc: true } } },
    { type: "user", msg: { type: "leave", body: { lTime: 3, node: "x", prune: false } } },
    {
      type: "user",
      msg: {
        type: "query",
        body: {
          lTime: 2, id: 77, addr: "10.0.0.1:7946", sourceNode: "m", filters: [{ type: "node", nodes: ["a"] }],
          flags: 1, relayFactor: 0, timeoutMs: 3200, name: "q", payload: null,
        },
      },
    },
    { type: "user", msg: { type: "relay", destAddr: "10.0.0.1:7946", destName: "m", inner: { lTime: 2, id: 77, from: "z", flags: 0, payload: new Uint8Array([9]) } } },
    { type: "err", error: "boom" },
  ];
  for (const m of msgs) {
    const bytes = c.encode(m, { stream: false });
    const back = c.decode(bytes, { stream: false });
    assert.ok(back.ok, `${m.type}: ${!back.ok && back.error}`);
    assert.deepEqual(back.msgs, [m], `${m.type} via packet`);
    assert.ok(c.measure(m) > 0);
  }
  const compound: SwimMessage<SerfTypes> = { type: "compound", parts: msgs.slice(0, 4) };
  const back = c.decode(c.encode(compound, { stream: false }), { stream: false });
  assert.ok(back.ok);
  assert.deepEqual(back.msgs, msgs.slice(0, 4));

  const pushPull: SwimMessage<SerfTypes> = {
    type: "pushPull",
    join: true,
    nodes: [{ name: "x", addr: "10.1.2.3:8301", incarnation: 2, meta: { role: "web" }, state: "left", vsn: [1, 5, 2, 2, 5, 5] }],
    userState: { lTime: 4, statusLTimes: new Map([["x", 3]]), leftMembers: ["x"], eventLTime: 1, events: [null, null], queryLTime: 1 },
  };
  const s = c.decode(c.encode(pushPull, { stream: true }), { stream: true });
  assert.ok(s.ok);
  assert.deepEqual(s.msgs, [pushPull]);
  // Stream acks carry no payload; pings round-trip on streams too.
  const ackS = c.decode(c.encode({ type: "ack", seqNo: 1, payload: msgs[2]!.type === "ack" ? msgs[2]!.payload : undefined }, { stream: true }), { stream: true });
  assert.ok(ackS.ok);
  assert.deepEqual(ackS.msgs, [{ type: "ack", seqNo: 1 }]);
});

test("codec: uncompressed encoding of a captured alive is byte-exact; bad input is an error", () => {
  const v = loadVectors("udp-gossip-alive-compound.json").vectors[1];
  const part = v.decoded.inner.parts[0].partHex as string;
  const c = serfWireCodec({ compress: false });
  const d = c.decode(fromHex(part), { stream: false });
  assert.ok(d.ok);
  assert.equal(toHex(c.encode(d.msgs[0]!, { stream: false })), part);
  assert.equal(c.measure(d.msgs[0]!), part.length / 2);
  assert.equal(c.decode(new Uint8Array([0x63]), { stream: false }).ok, false);
  assert.equal(c.decode(new Uint8Array([0x06, 0x83]), { stream: true }).ok, false);
  // A bytes-only codec passes payloads through.
  const b = bytesWireCodec();
  const u = b.decode(b.encode({ type: "user", msg: new Uint8Array([5, 6]) }, { stream: false }), { stream: false });
  assert.ok(u.ok);
  assert.deepEqual(u.msgs, [{ type: "user", msg: new Uint8Array([5, 6]) }]);
});

test("addr: IPv4/IPv6 text and bytes convert both ways", () => {
  assert.equal(ipToString(parseIp("2001:db8::1")!), "2001:db8::1");
  assert.equal(ipToString(parseIp("::")!), "::");
  assert.equal(ipToString(parseIp("::ffff:10.0.0.1")!), "10.0.0.1");
  assert.equal(ipToString(parseIp("fe80:0:0:1:0:0:0:1")!), "fe80:0:0:1::1");
  assert.equal(parseIp("1.2.3.256"), undefined);
  assert.equal(parseIp("host.example"), undefined);
  assert.equal(parseIp("1::2::3"), undefined);
  assert.deepEqual(parseAddr("[::1]:80"), { ip: parseIp("::1"), port: 80 });
  assert.equal(parseAddr("10.0.0.1:99999"), undefined);
});

test("codec: a member's unchanged metadata decodes to one frozen value, a change to a new one", () => {
  const c = serfWireCodec();
  const alive = (incarnation: number, tags: Record<string, string>): Uint8Array =>
    c.encode({ type: "alive", node: "a", addr: "127.0.0.1:7946", incarnation, meta: tags, vsn: [1, 5, 2, 2, 5, 4] }, { stream: false });
  const meta = (bytes: Uint8Array) => {
    const d = c.decode(bytes, { stream: false });
    assert.ok(d.ok && d.msgs[0]!.type === "alive");
    return (d.msgs[0] as Extract<SwimMessage<SerfTypes>, { type: "alive" }>).meta;
  };
  const first = meta(alive(1, { role: "node", dc: "dc1" }));
  assert.ok(Object.isFrozen(first));
  assert.equal(meta(alive(2, { role: "node", dc: "dc1" })), first);
  const changed = meta(alive(3, { role: "node", dc: "dc2" }));
  assert.notEqual(changed, first);
  assert.deepEqual(changed, { role: "node", dc: "dc2" });
  // Plain-bytes metadata is handed out as is (a typed array cannot be frozen).
  const b = bytesWireCodec();
  const d = b.decode(b.encode({ type: "alive", node: "a", addr: "127.0.0.1:7946", incarnation: 1, meta: new Uint8Array([1, 2]), vsn: [1, 5, 2, 2, 5, 5] }, { stream: false }), { stream: false });
  assert.ok(d.ok);
  assert.deepEqual((d.msgs[0] as Extract<SwimMessage<BytesGossipTypes>, { type: "alive" }>).meta, new Uint8Array([1, 2]));
});

test("codec: a broadcast encodes the same bytes every time it is sent, and measures that length", () => {
  const c = serfWireCodec({ compress: false });
  const msg: SwimMessage<SerfTypes> = { type: "alive", node: "a", addr: "127.0.0.1:7946", incarnation: 1, meta: { role: "node" }, vsn: [1, 5, 2, 2, 5, 4] };
  const once = c.encode(msg, { stream: false });
  assert.equal(toHex(c.encode({ type: "compound", parts: [msg, msg] }, { stream: false }).subarray(-once.length)), toHex(once));
  assert.equal(c.measure(msg), once.length);
  const join: SwimMessage<SerfTypes> = { type: "user", msg: { type: "join", body: { lTime: 7, node: "a" } } };
  assert.equal(toHex(c.encode(join, { stream: false })), toHex(c.encode({ type: "user", msg: { type: "join", body: { lTime: 7, node: "a" } } }, { stream: false })));
});

test("codec: the same broadcast received twice decodes to the same value; another one does not", () => {
  const c = serfWireCodec();
  const alive = (inc: number): SwimMessage<SerfTypes> => ({ type: "alive", node: "a", addr: "127.0.0.1:7946", incarnation: inc, meta: { role: "node" }, vsn: [1, 5, 2, 2, 5, 4] });
  const join: SwimMessage<SerfTypes> = { type: "user", msg: { type: "join", body: { lTime: 3, node: "a" } } };
  const packet = c.encode({ type: "compound", parts: [{ type: "ping", seqNo: 1, node: "b" }, alive(1), join] }, { stream: false });
  const first = c.decode(packet, { stream: false });
  const again = c.decode(packet, { stream: false });
  assert.ok(first.ok && again.ok);
  assert.deepEqual(first.msgs.map((m) => m.type), ["ping", "alive", "user"]);
  assert.notEqual(again.msgs[0], first.msgs[0]); // pings are not cached
  assert.equal(again.msgs[1], first.msgs[1]);
  assert.equal(again.msgs[2], first.msgs[2]);
  const newer = c.decode(c.encode(alive(2), { stream: false }), { stream: false });
  assert.ok(newer.ok);
  assert.notEqual(newer.msgs[0], first.msgs[1]);
  assert.equal((newer.msgs[0] as Extract<SwimMessage<SerfTypes>, { type: "alive" }>).incarnation, 2);
});

test("codec: a push/pull's node entries are re-encoded when a member changes (entries are reused otherwise)", () => {
  const c = serfWireCodec({ compress: false });
  const vsn = [1, 5, 2, 2, 5, 4];
  const meta = { role: "node", dc: "dc1" };
  const userState = { lTime: 4, statusLTimes: new Map([["x", 3]]), leftMembers: [], eventLTime: 1, events: [null, { lTime: 1, events: [{ name: "e", payload: new Uint8Array([1]) }] }, null, null], queryLTime: 1 };
  const pp = (nodes: Extract<SwimMessage<SerfTypes>, { type: "pushPull" }>["nodes"]): SwimMessage<SerfTypes> => ({ type: "pushPull", join: false, nodes, userState });
  const x = { name: "x", addr: "10.1.2.3:8301", incarnation: 2, meta, state: "alive" as const, vsn };
  const y = { name: "y", addr: "10.1.2.4:8301", incarnation: 1, meta, state: "alive" as const, vsn };
  const steps = [
    pp([x, y]),
    pp([x, y]),
    pp([{ ...x, incarnation: 3 }, y]),
    pp([{ ...x, incarnation: 3, state: "suspect" }, y]),
    pp([{ ...x, incarnation: 3, state: "suspect", meta: { role: "node", dc: "dc2" } }, y]),
    pp([{ ...x, incarnation: 3, state: "suspect", meta: { role: "node", dc: "dc2" }, addr: "10.1.2.5:8302" }, y]),
    pp([y, { ...x, vsn: [1, 5, 2, 2, 5, 5] }]),
  ];
  for (const m of steps) {
    const bytes = c.encode(m, { stream: true });
    assert.deepEqual(bytes, serfWireCodec({ compress: false }).encode(m, { stream: true }), "same bytes as a fresh codec");
    const back = c.decode(bytes, { stream: true });
    assert.ok(back.ok);
    assert.deepEqual(back.msgs, [m]);
  }
});

test("codec: an alive accepted from the wire goes out again as the bytes it came in, whatever their field order", () => {
  // Go's decoder takes struct fields in any order and integers in any width; a node passing the
  // broadcast on must not change what the origin meant, so it sends what it received.
  const w = new MpWriter();
  w.byte(MessageType.alive);
  w.mapHeader(6);
  w.str("Node").str("n1");
  w.str("Incarnation").byte(0xce).u32(7); // uint32 where our encoder writes a fixint
  w.str("Addr").raw(Uint8Array.of(10, 0, 0, 1));
  w.str("Port").int(7946);
  w.str("Meta").raw(encodeTags(new Map([["role", "node"]])));
  w.str("Vsn").raw(Uint8Array.of(1, 5, 2, 2, 5, 4));
  const bytes = w.bytes();
  const c = serfWireCodec({ compress: false });
  const d = c.decode(bytes, { stream: false });
  assert.ok(d.ok);
  const alive = d.msgs[0]!;
  assert.equal(alive.type, "alive");
  assert.equal(toHex(c.encode(alive, { stream: false })), toHex(bytes));
  assert.equal(c.measure(alive), bytes.length);
  // The same member state built anew (as from a push/pull entry) reuses that encoding too.
  if (alive.type !== "alive") return;
  const rebuilt: SwimMessage<SerfTypes> = { type: "alive", node: alive.node, addr: alive.addr, incarnation: alive.incarnation, meta: alive.meta, vsn: [...alive.vsn] };
  assert.equal(toHex(c.encode(rebuilt, { stream: false })), toHex(bytes));
  // A different incarnation is encoded afresh.
  const next: SwimMessage<SerfTypes> = { ...rebuilt, incarnation: 8 };
  assert.notEqual(toHex(c.encode(next, { stream: false })), toHex(bytes));
});
