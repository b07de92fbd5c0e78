// Garbage, truncated and oversized input returns errors and never throws,
// including a seeded fuzz loop over mutated vectors (SIM_SEED=n replays one).

import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng, seeds } from "../../sim/rng.ts";
import { fromHex, loadVectors } from "./_vectors.ts";
import {
  decodeAliveGeneric,
  decodeCompress,
  decodeMessage,
  decodePacket,
  decodePushNodeState,
  decodePushNodeStateGeneric,
  encodeAlive,
  encodeCompound,
  encodeCompress,
  encodePing,
  encodePushNodeState,
  encodePushPull,
  measureStream,
  parseStream,
  splitCompound,
} from "./memberlist.ts";
import { decodeCoordinatePayload, decodeQueryFilter, decodeSerfMessage, decodeSerfMessageGeneric, decodeTags, decodeTagsGeneric, encodeSerfMessage, encodeTags } from "./serf.ts";
import type { Alive, MessagePushPull, PushNodeState } from "./messages.ts";
import { lzwCompress, lzwDecompress } from "./lzw.ts";
import { compareBytewise, decodeValue, MpWriter } from "./msgpack_go.ts";
import { decryptPayload, Keyring, peekEncryptedStream } from "./crypto.ts";
import { serfWireCodec } from "./codec.ts";

const codec = serfWireCodec();

function corpus(): Uint8Array[] {
  const out: Uint8Array[] = [];
  const files = [
    "udp-ping-ack.json",
    "udp-gossip-alive-compound.json",
    "udp-user-events.json",
    "udp-queries.json",
    "udp-failure-detection.json",
    "udp-leave.json",
    "tcp-pushpull-compressed.json",
    "tcp-pushpull-uncompressed.json",
    "tcp-ping-fallback.json",
  ];
  for (const f of files) {
    for (const v of loadVectors(f).vectors) {
      if (v.hex) out.push(fromHex(v.hex));
      if (v.clientToServer) out.push(fromHex(v.clientToServer.hex), fromHex(v.serverToClient.hex));
      if (v.decoded?.serfHex) out.push(fromHex(v.decoded.serfHex));
    }
  }
  return out;
}

function mutate(rng: Rng, input: Uint8Array): Uint8Array {
  const b = input.slice();
  switch (rng.int(5)) {
    case 0: // flip some bytes
      for (let i = 0, n = rng.range(1, 4); i < n && b.length > 0; i++) b[rng.int(b.length)] = rng.int(256);
      return b;
    case 1: // truncate
      return b.subarray(0, rng.int(b.length + 1));
    case 2: // insert random bytes
    {
      const at = rng.int(b.length + 1);
      return new Uint8Array([...b.subarray(0, at), ...rng.bytes(rng.range(1, 8)), ...b.subarray(at)]);
    }
    case 3: // set a byte to an interesting msgpack/length value
      if (b.length > 0) b[rng.int(b.length)] = rng.pick([0x00, 0x7f, 0xc0, 0xc4, 0xd9, 0xdb, 0xdd, 0xdf, 0xff]);
      return b;
    default: // pure garbage
      return rng.bytes(rng.int(64));
  }
}

function everyDecoder(bytes: Uint8Array): void {
  decodePacket(bytes);
  decodeMessage(bytes);
  parseStream(bytes);
  measureStream(bytes);
  decodeSerfMessage(bytes);
  decodeTags(bytes);
  decodeQueryFilter(bytes);
  decodeCoordinatePayload(bytes);
  lzwDecompress(bytes, { maxBytes: 1 << 20 });
  splitCompound(bytes);
  decodeCompress(bytes, { maxBytes: 1 << 20 });
  peekEncryptedStream(bytes);
  decodeValue(bytes);
  codec.decode(bytes, { stream: false });
  codec.decode(bytes, { stream: true });
}

test("wire fuzz: mutated vectors never make a decoder throw", () => {
  const base = corpus();
  assert.ok(base.length > 30);
  for (const seed of seeds(20)) {
    const rng = new Rng(seed);
    for (let i = 0; i < 300; i++) {
      const input = mutate(rng, rng.pick(base));
      try {
        everyDecoder(input);
      } catch (err) {
        assert.fail(`seed ${seed} iteration ${i}: decoder threw on ${Buffer.from(input).toString("hex")}: ${err}`);
      }
    }
  }
});

test("wire: truncated inputs are errors, never partial successes", () => {
  const ping = encodePing({ seqNo: 9, node: "n", sourceAddr: new Uint8Array([10, 0, 0, 1]), sourcePort: 1, sourceNode: "m" });
  for (let n = 0; n < ping.length; n++) {
    const r = decodeMessage(ping.subarray(0, n));
    assert.equal(r.ok, false, `ping cut at ${n} bytes decoded`);
    assert.equal(parseStream(ping.subarray(0, n)).status, "more", `ping cut at ${n} should wait for more`);
  }
  assert.ok(decodeMessage(ping).ok);
});

test("wire: empty, unknown-type and CRC-mismatch packets are reported", () => {
  assert.equal(decodePacket(new Uint8Array(0)).errors[0]?.code, "truncated");
  assert.equal(decodePacket(new Uint8Array([99, 1, 2])).errors[0]?.code, "unknown_type");
  assert.equal(decodePacket(new Uint8Array([244, 1, 0x41, 0])).errors[0]?.code, "unknown_type");
  const crc = new Uint8Array([12, 0, 0, 0, 0, ...encodePing({ seqNo: 1, node: "" })]);
  const r = decodePacket(crc);
  assert.equal(r.messages.length, 0);
  assert.equal(r.errors[0]?.code, "crc");
});

test("wire: a truncated compound keeps its complete parts", () => {
  const a = encodePing({ seqNo: 1, node: "a" });
  const b = encodePing({ seqNo: 2, node: "b" });
  const full = encodeCompound([a, b]);
  const r = decodePacket(full.subarray(0, full.length - 3));
  assert.equal(r.messages.length, 1);
  assert.equal(r.errors[0]?.code, "truncated");
  // A bad part is dropped, the good one kept.
  const bad = decodePacket(encodeCompound([new Uint8Array([0, 0xc1]), b]));
  assert.equal(bad.messages.length, 1);
  assert.equal(bad.errors.length, 1);
});

test("wire: oversized claims fail fast without allocating", () => {
  // Array/map/raw headers claiming 4 GiB in a tiny buffer.
  for (const hex of ["dd ffffffff", "df ffffffff", "db ffffffff 00", "c6 ffffffff"]) {
    const r = decodeValue(fromHex(hex.replace(/ /g, "")));
    assert.ok(!r.ok && r.error.code === "truncated", hex);
  }
  // Deep nesting is an error, not a stack overflow.
  const deep = new Uint8Array(100_000).fill(0x91);
  const d = decodeValue(deep);
  assert.ok(!d.ok && d.error.code === "bad_msgpack");
  // Push/pull claiming a million nodes in a short stream.
  const w = new MpWriter();
  w.byte(6).struct({ Join: (w) => w.bool(true), Nodes: (w) => w.int(1_000_000), UserStateLen: (w) => w.int(0) });
  const pp = parseStream(w.bytes(), { maxNodes: 1000 });
  assert.ok(pp.status === "error" && pp.error.code === "bad_field");
  // Encrypted frame longer than the cap.
  const f = peekEncryptedStream(fromHex("0a7fffffff01"), 1 << 20);
  assert.ok(f.status === "error" && f.error.code === "too_large");
});

test("wire: decompression output is capped (LZW bombs)", () => {
  const big = new Uint8Array(200_000);
  const bomb = encodeCompress(big);
  assert.ok(bomb.length < 20_000);
  const r = decodeCompress(bomb, { maxBytes: 100_000 });
  assert.ok(!r.ok && r.error.code === "too_large");
  const ok = decodeCompress(bomb, { maxBytes: 300_000 });
  assert.ok(ok.ok && ok.value.length === 200_000);
  // Missing EOF code.
  const lz = lzwCompress(new Uint8Array([1, 2, 3]));
  assert.equal(lzwDecompress(lz.subarray(0, lz.length - 1)).ok, false);
});

test("wire: a compressed stream push/pull round trips and a cut one waits for more", () => {
  const pp = encodePushPull({
    join: true,
    nodes: [{ name: "x", addr: new Uint8Array([127, 0, 0, 1]), port: 7946, meta: new Uint8Array([0xff, 0x80]), incarnation: 3, state: 0, vsn: new Uint8Array([1, 5, 2, 2, 5, 5]) }],
    userState: new Uint8Array([2, 0x80]),
  });
  const c = encodeCompress(pp);
  for (let n = 0; n < c.length; n++) assert.equal(parseStream(c.subarray(0, n)).status, "more", `cut at ${n}`);
  const r = parseStream(c);
  assert.ok(r.status === "ok" && r.message.type === "pushPull" && r.message.body.nodes[0]!.incarnation === 3);
});

test("wire: measureStream frames every stream message where parseStream ends it, without decoding it", () => {
  // Captured streams (compressed and plain push/pulls, TCP pings and acks), then cut and mutated ones.
  const streams = corpus().filter((b) => [0, 2, 6, 8, 9, 13].includes(b[0]!) && parseStream(b).status === "ok");
  assert.ok(streams.some((b) => b[0] === 6) && streams.some((b) => b[0] === 9), "the corpus has plain and compressed push/pulls");
  const check = (bytes: Uint8Array, what: string): void => {
    const p = parseStream(bytes);
    const m = measureStream(bytes);
    if (p.status === "ok") assert.deepEqual(m, { status: "ok", consumed: p.consumed }, what);
    else if (p.status === "more") assert.equal(m.status, "more", what);
    // (A message parseStream rejects may still frame: damage inside it is for its decoder to find.)
  };
  for (const s of streams) {
    check(s, "whole");
    check(new Uint8Array([...s, 0xc0, 0x01]), "with the next bytes behind it");
    for (let n = 0; n < s.length; n++) assert.equal(measureStream(s.subarray(0, n)).status, "more", `cut at ${n} of ${s.length}`);
  }
  for (const seed of seeds(10)) {
    const rng = new Rng(seed);
    for (let i = 0; i < 200; i++) check(mutate(rng, rng.pick(streams)), `seed ${seed} iteration ${i}`);
  }
  assert.equal(measureStream(new Uint8Array([0x63, 0x63])).status, "error");
  assert.equal(measureStream(new Uint8Array([0x06, 0xc1])).status, "error");
});

test("wire: garbage does not decrypt and reports an error", async () => {
  const ring = new Keyring([new Uint8Array(16)]);
  for (const hex of ["", "01", "02" + "00".repeat(40), "01" + "00".repeat(40), "00" + "00".repeat(30)]) {
    const r = await decryptPayload(ring, fromHex(hex));
    assert.ok(!r.ok && r.error.code === "decrypt", hex);
  }
});

test("msgpack: struct keys and tag maps sort by UTF-8 bytes, not UTF-16 code units", () => {
  // U+FF5E (3 UTF-8 bytes, ef bd 9e) sorts before U+1F600 (4 bytes, f0 ...), though its code unit is larger.
  const keys = ["b", "\u{1F600}", "a", "\uFF5E", "ab", "é"];
  assert.deepEqual([...keys].sort(compareBytewise), ["a", "ab", "b", "é", "\uFF5E", "\u{1F600}"]);
  assert.equal(compareBytewise("abc", "abc"), 0);
  assert.ok(compareBytewise("ab", "abc") < 0);
});

test("lzw: round trips of random inputs, one after another (the coder tables are reused)", () => {
  for (const seed of seeds(50)) {
    const rng = new Rng(seed);
    const alphabet = 1 + rng.int(255);
    const input = Uint8Array.from({ length: rng.int(20_000) }, () => rng.int(alphabet));
    const d = lzwDecompress(lzwCompress(input));
    assert.ok(d.ok, `seed ${seed}`);
    assert.deepEqual(d.value, input, `seed ${seed}`);
  }
});

test("decodeTags: the direct reader agrees with the general decoder on Go-shaped, odd and broken tags", () => {
  for (const seed of seeds(300)) {
    const rng = new Rng(seed);
    const text = (n: number) => Array.from({ length: n }, () => rng.pick(["a", "z", "0", "-", "é", "☃", "\u0000"])).join("");
    const tags = new Map<string, string>();
    for (let i = rng.int(20); i > 0; i--) tags.set(text(rng.int(40)), text(rng.int(rng.chance(0.2) ? 300 : 40)));
    const good = encodeTags(tags);
    const variants = [good, good.subarray(0, rng.int(good.length)), Uint8Array.of(...good, 0xc0)];
    const broken = good.slice();
    if (broken.length > 1) broken[1 + rng.int(broken.length - 1)] = rng.int(256);
    variants.push(broken);
    for (const v of variants) {
      assert.deepEqual(decodeTags(v), decodeTagsGeneric(v), `seed=${seed} bytes=${[...v].map((b) => b.toString(16).padStart(2, "0")).join("")}`);
    }
    assert.deepEqual(decodeTags(good), { ok: true, value: tags });
  }
});

test("decodeSerfMessage: the direct push/pull reader agrees with the general decoder", () => {
  for (const seed of seeds(300)) {
    const rng = new Rng(seed);
    const name = () => Array.from({ length: 1 + rng.int(rng.chance(0.1) ? 40 : 12) }, () => rng.pick(["n", "é", "7", "-"])).join("");
    const clock = () => rng.pick([0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 40]);
    const body: MessagePushPull = {
      lTime: clock(),
      statusLTimes: new Map(Array.from({ length: rng.int(rng.chance(0.2) ? 40 : 8) }, () => [name(), clock()] as [string, number])),
      leftMembers: Array.from({ length: rng.int(3) }, name),
      eventLTime: clock(),
      events: Array.from({ length: rng.pick([0, 3, 512]) }, () =>
        rng.chance(0.02) ? { lTime: clock(), events: [{ name: name(), payload: Uint8Array.of(1, 2) }] } : null,
      ),
      queryLTime: clock(),
    };
    const good = encodeSerfMessage({ type: "pushPull", body });
    const broken = good.slice();
    broken[1 + rng.int(broken.length - 1)] = rng.int(256);
    for (const v of [good, good.subarray(0, rng.int(good.length)), Uint8Array.of(...good, 0x01), broken]) {
      assert.deepEqual(decodeSerfMessage(v), decodeSerfMessageGeneric(v), `seed=${seed}`);
    }
    assert.deepEqual(decodeSerfMessage(good), { ok: true, value: { type: "pushPull", body } }, `seed=${seed}`);
  }
});

test("decodeMessage, decodePushNodeState: the direct member reader agrees with the general decoder", () => {
  const hex = (v: Uint8Array) => [...v].map((b) => b.toString(16).padStart(2, "0")).join("");
  for (const seed of seeds(300)) {
    const rng = new Rng(seed);
    const text = () => Array.from({ length: rng.int(rng.chance(0.1) ? 300 : 20) }, () => rng.pick(["n", "é", "7", "-", "\u0000"])).join("");
    const bytes = () => Uint8Array.from({ length: rng.pick([0, 4, 16, 6, rng.int(300)]) }, () => rng.int(256));
    const uint = () => rng.pick([0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32]);
    const node: PushNodeState = { name: text(), addr: bytes(), port: rng.pick([0, 1, 8301, 65535]), meta: bytes(), incarnation: uint() % 2 ** 32, state: rng.int(5), vsn: bytes() };
    const alive: Alive = { incarnation: node.incarnation, node: node.name, addr: node.addr, port: node.port, meta: node.meta, vsn: node.vsn };
    const variants = (good: Uint8Array, from: number) => {
      const broken = good.slice();
      broken[from + rng.int(good.length - from)] = rng.int(256);
      return [good, good.subarray(0, rng.int(good.length)), Uint8Array.of(...good, 0xc0), broken];
    };
    const goodNode = encodePushNodeState(node);
    for (const v of variants(goodNode, 0)) {
      assert.deepEqual(decodePushNodeState(v), decodePushNodeStateGeneric(v), `seed=${seed} bytes=${hex(v)}`);
    }
    assert.deepEqual(decodePushNodeState(goodNode), { ok: true, value: node }, `seed=${seed}`);
    const goodAlive = encodeAlive(alive);
    for (const v of variants(goodAlive, 1)) {
      const generic = decodeAliveGeneric(v);
      assert.deepEqual(decodeMessage(v), generic.ok ? { ok: true, value: { type: "alive", body: generic.value } } : generic, `seed=${seed} bytes=${hex(v)}`);
    }
    assert.deepEqual(decodeMessage(goodAlive), { ok: true, value: { type: "alive", body: alive } }, `seed=${seed}`);
  }
});
