// Every vector in core/gossip/testdata/vectors decodes to its documented
// fields; everything Go encodes deterministically re-encodes byte for byte.

import assert from "node:assert/strict";
import { test } from "node:test";
import { compareFields, compareValue, fromHex, loadVectors, toHex } from "./_vectors.ts";
import {
  addCrc,
  crc32,
  decodeMessage,
  decodePacket,
  decodePushNodeState,
  decodePushPullHeader,
  encodeCompound,
  encodeCompress,
  encodeMessage,
  encodePing,
  encodePushNodeState,
  encodePushPullHeader,
  encodeStream,
  encodeStreamMessage,
  encodeUserStream,
  parseStream,
} from "./memberlist.ts";
import {
  decodeCoordinatePayload,
  decodeQueryFilter,
  decodeSerfMessage,
  decodeTags,
  encodeCoordinatePayload,
  encodeQueryFilter,
  encodeSerfMessage,
  encodeTags,
} from "./serf.ts";
import { lzwCompress, lzwDecompress } from "./lzw.ts";
import {
  decryptPayload,
  decryptStreamFrame,
  encryptPayload,
  encryptStream,
  Keyring,
  keyFromBase64,
  peekEncryptedStream,
} from "./crypto.ts";
import type { MemberlistMessage, SerfMessage } from "./messages.ts";

type Node = Record<string, any>;

function leavesOf(node: Node): Node[] {
  if (node.name === "hasCrc" || node.name === "compress") return leavesOf(node.inner);
  if (node.name === "compound") return (node.parts as Node[]).flatMap(leavesOf);
  return [node];
}

/** A Serf message re-encodes exactly unless it holds a Go map with several entries (random order). */
function serfReencodes(m: SerfMessage): boolean {
  if (m.type === "pushPull") return m.body.statusLTimes.size <= 1;
  if (m.type === "conflictResponse") return m.body === null || m.body.tags.size <= 1;
  return true;
}

function checkSerf(expected: Node, bytes: Uint8Array, path: string): void {
  const r = decodeSerfMessage(bytes);
  assert.ok(r.ok, `${path}: serf decode failed: ${!r.ok && r.error.message}`);
  const m = r.value;
  assert.equal(m.type, expected.name, `${path}: serf type`);
  if (m.type === "relay") {
    compareFields(expected.relayHeader, m.header, `${path}.relayHeader`);
    assert.equal(toHex(m.inner), expected.innerHex, `${path}: relay inner bytes`);
    checkSerf(expected.inner, m.inner, `${path}.inner`);
  } else if (expected.fields !== undefined) {
    compareFields(expected.fields, m.body as object, path);
  }
  if (m.type === "query" && expected.filtersDecoded) {
    const filters = m.body.filters ?? [];
    assert.equal(filters.length, expected.filtersDecoded.length, `${path}: filter count`);
    filters.forEach((f, i) => {
      const want = expected.filtersDecoded[i];
      const d = decodeQueryFilter(f);
      assert.ok(d.ok, `${path}: filter ${i} decode`);
      if (d.value.type === "node") compareValue(want.value, d.value.nodes, `${path}.filter${i}`);
      else compareFields(want.value, d.value.filter, `${path}.filter${i}`);
      assert.equal(toHex(encodeQueryFilter(d.value)), toHex(f), `${path}: filter ${i} re-encodes`);
    });
  }
  if (expected.payloadDecoded && (m.type === "query" || m.type === "queryResponse")) {
    checkSerf(expected.payloadDecoded, m.body.payload ?? new Uint8Array(0), `${path}.payload`);
  }
  if (serfReencodes(m)) assert.equal(toHex(encodeSerfMessage(m)), toHex(bytes), `${path}: serf re-encodes`);
}

function checkLeaf(expected: Node, actual: MemberlistMessage, bytes: Uint8Array | undefined, path: string): void {
  assert.equal(actual.type, expected.name, `${path}: message type`);
  if (actual.type === "user") {
    assert.equal(toHex(actual.body), expected.serfHex, `${path}: user bytes`);
    checkSerf(expected.serf, actual.body, `${path}.serf`);
  } else {
    compareFields(expected.fields, actual.body, path);
  }
  if (actual.type === "alive" && expected.metaDecoded) {
    const tags = decodeTags(actual.body.meta);
    assert.ok(tags.ok);
    compareValue(expected.metaDecoded.tags, tags.value, `${path}.meta`);
  }
  if (actual.type === "ackResp" && expected.payloadDecoded) {
    const c = decodeCoordinatePayload(actual.body.payload!);
    assert.ok(c.ok, `${path}: coordinate decode`);
    compareFields(expected.payloadDecoded.coordinate, c.value, `${path}.coordinate`);
    assert.equal(toHex(encodeCoordinatePayload(c.value)), toHex(actual.body.payload!), `${path}: coordinate re-encodes`);
  }
  const partHex = expected.partHex ?? (bytes ? toHex(bytes) : undefined);
  if (partHex !== undefined) assert.equal(toHex(encodeMessage(actual)), partHex, `${path}: re-encodes`);
}

const ring = (() => {
  const keys = loadVectors("encrypted.json").keys.keysBase64;
  return new Keyring([keyFromBase64(keys.K1)!, keyFromBase64(keys.K2)!]);
})();

async function checkUdp(v: Node, path: string): Promise<void> {
  let bytes = fromHex(v.hex);
  if (v.encryption) {
    const d = await decryptPayload(ring, bytes);
    assert.ok(d.ok, `${path}: decrypt`);
    assert.equal(toHex(d.value), v.plaintextHex, `${path}: plaintext`);
    // Re-encrypt with the captured key and nonce: same bytes.
    const one = new Keyring([keyFromBase64(v.encryption.keyUsedBase64)!]);
    const again = await encryptPayload(one, d.value, { nonce: () => fromHex(v.encryption.nonceHex) });
    assert.equal(toHex(again), v.hex, `${path}: re-encrypts`);
    bytes = d.value;
  }
  const pkt = decodePacket(bytes);
  assert.deepEqual(pkt.errors, [], `${path}: decode errors`);
  assert.equal(pkt.hadCrc, v.decoded.name === "hasCrc", `${path}: crc flag`);
  const leaves = leavesOf(v.decoded);
  assert.equal(pkt.messages.length, leaves.length, `${path}: message count`);
  leaves.forEach((leaf, i) => checkLeaf(leaf, pkt.messages[i]!, leaves.length === 1 && !pkt.hadCrc && !pkt.hadCompression ? bytes : undefined, `${path}[${i}]`));
}

async function checkStreamDirection(dir: Node, path: string): Promise<void> {
  let bytes = fromHex(dir.hex);
  const d = dir.decoded;
  if (d.firstByte === 10) {
    const layer = d.layers.find((l: Node) => l.layer === "encrypt");
    const key = keyFromBase64(layer.keyUsedBase64)!;
    const f = peekEncryptedStream(bytes);
    assert.equal(f.status, "frame", `${path}: encrypted frame`);
    if (f.status !== "frame") return;
    assert.equal(f.consumed, bytes.length, `${path}: frame length`);
    const plain = await decryptStreamFrame(new Keyring([fromHex("00".repeat(16)), key]), f.header, f.blob);
    assert.ok(plain.ok, `${path}: stream decrypt`);
    assert.equal(toHex(plain.value), d.plaintextHex, `${path}: stream plaintext`);
    const again = await encryptStream(new Keyring([key]), plain.value, { nonce: () => fromHex(layer.nonceHex) });
    assert.equal(toHex(again), dir.hex, `${path}: stream re-encrypts`);
    bytes = plain.value;
  }
  // Feed in two halves first: the parser must ask for more, not fail.
  const half = parseStream(bytes.subarray(0, Math.floor(bytes.length / 2)));
  assert.equal(half.status, "more", `${path}: half a stream needs more bytes`);
  const r = parseStream(bytes);
  assert.equal(r.status, "ok", `${path}: stream parse ${r.status === "error" ? r.error.message : ""}`);
  if (r.status !== "ok") return;
  assert.equal(r.consumed, bytes.length, `${path}: consumed all`);
  const m = r.message;
  assert.equal(m.type, d.name, `${path}: stream message type`);
  if (m.type === "pushPull") {
    assert.equal(m.body.join, d.pushPullHeader.Join);
    assert.equal(m.body.nodes.length, d.pushPullHeader.Nodes);
    assert.equal(m.body.userState.length, d.pushPullHeader.UserStateLen);
    d.nodeStates.forEach((ns: Node, i: number) => {
      compareFields(ns.fields, m.body.nodes[i]!, `${path}.node${i}`);
      assert.equal(toHex(encodePushNodeState(m.body.nodes[i]!)), ns.hex, `${path}.node${i} re-encodes`);
      const tags = decodeTags(m.body.nodes[i]!.meta);
      assert.ok(tags.ok);
      compareValue(ns.metaDecoded.tags, tags.value, `${path}.node${i}.tags`);
    });
    assert.equal(toHex(m.body.userState), d.userStateHex, `${path}: user state`);
    checkSerf(d.userState, m.body.userState, `${path}.userState`);
  } else if (m.type !== "user") {
    compareFields(d.fields, m.body, path);
  }
  const plainMsg = encodeStreamMessage(m);
  if (r.compressed) {
    assert.equal(toHex(plainMsg), d.decompressedHex, `${path}: re-encodes (decompressed)`);
    assert.equal(toHex(encodeStream(plainMsg, { compress: true })), toHex(bytes), `${path}: re-compresses`);
  } else if (m.type !== "pushPull" || m.body.nodes.length >= 0) {
    assert.equal(toHex(plainMsg), toHex(bytes), `${path}: re-encodes`);
  }
}

const captured = [
  "udp-ping-ack.json",
  "udp-gossip-alive-compound.json",
  "udp-user-events.json",
  "udp-queries.json",
  "udp-failure-detection.json",
  "udp-leave.json",
  "tcp-pushpull-compressed.json",
  "tcp-pushpull-uncompressed.json",
  "tcp-ping-fallback.json",
  "tcp-error-response.json",
  "encrypted.json",
];

for (const file of captured) {
  test(`wire vectors: ${file} decode to their documented fields and re-encode`, async () => {
    const { vectors } = loadVectors(file);
    assert.ok(vectors.length > 0);
    for (const [i, v] of (vectors as Node[]).entries()) {
      const path = `${file}#${i} (${v.title})`;
      if (v.transport === "udp") await checkUdp(v, path);
      else {
        await checkStreamDirection(v.clientToServer, `${path} c->s`);
        await checkStreamDirection(v.serverToClient, `${path} s->c`);
      }
    }
  });
}

test("wire vectors: codec-canonical memberlist structs re-encode byte for byte", () => {
  const { memberlist } = loadVectors("codec-canonical.json");
  const byName = new Map<string, Node>((memberlist as Node[]).map((v) => [v.name, v]));
  for (const v of memberlist as Node[]) {
    const path = `codec-canonical ${v.name}`;
    if (v.name === "crc32_of_ping_min") {
      const ping = fromHex(byName.get("ping_min")!.hex);
      assert.equal(crc32(ping).toString(16).padStart(8, "0"), v.crc32, path);
      assert.equal(toHex(addCrc(ping)), v.hasCrcPacketHex, path);
      continue;
    }
    const bytes = fromHex(v.hex);
    if (v.name === "pushNodeState") {
      const r = decodePushNodeState(bytes);
      assert.ok(r.ok, path);
      compareFields(v.decoded.fields, r.value, path);
      assert.equal(toHex(encodePushNodeState(r.value)), v.hex, path);
      continue;
    }
    if (v.name === "pushPullHeader") {
      const r = decodePushPullHeader(bytes);
      assert.ok(r.ok, path);
      assert.deepEqual(r.value, { join: true, nodes: 2, userStateLen: 585 }, path);
      assert.equal(toHex(encodePushPullHeader(r.value)), v.hex, path);
      continue;
    }
    if (v.name === "userMsgHeader") {
      const body = new Uint8Array(17).fill(7);
      const full = new Uint8Array([...bytes, ...body]);
      assert.equal(parseStream(bytes).status, "more", path);
      const r = parseStream(full);
      assert.ok(r.status === "ok" && r.message.type === "user" && toHex(r.message.body) === toHex(body), path);
      assert.equal(toHex(encodeUserStream(body)), toHex(full), path);
      continue;
    }
    if (v.name === "ack_payload") {
      const r = decodeMessage(bytes);
      assert.ok(r.ok && r.value.type === "ackResp", path);
      assert.equal(r.value.body.seqNo, 300);
      assert.equal(toHex(r.value.body.payload!), "010203");
      assert.equal(toHex(encodeMessage(r.value)), v.hex, path);
      continue;
    }
    if (v.name === "compound_ping_suspect") {
      const pkt = decodePacket(bytes);
      assert.deepEqual(pkt.errors, []);
      const leaves = leavesOf(v.decoded);
      leaves.forEach((leaf, i) => checkLeaf(leaf, pkt.messages[i]!, undefined, `${path}[${i}]`));
      assert.equal(toHex(encodeCompound(pkt.messages.map(encodeMessage))), v.hex, path);
      continue;
    }
    const r = decodeMessage(bytes);
    assert.ok(r.ok, `${path}: ${!r.ok && r.error.message}`);
    checkLeaf(v.decoded, r.value, bytes, path);
  }
});

test("wire vectors: codec-canonical serf structs, filters, tags and coordinates re-encode", () => {
  const { serf } = loadVectors("codec-canonical.json");
  for (const v of serf as Node[]) {
    const path = `codec-canonical serf ${v.name}`;
    const bytes = fromHex(v.hex);
    if (v.name === "filterNode" || v.name === "filterTag") {
      const r = decodeQueryFilter(bytes);
      assert.ok(r.ok, path);
      if (v.name === "filterNode") assert.deepEqual(r.value, { type: "node", nodes: ["a", "b"] });
      else assert.deepEqual(r.value, { type: "tag", filter: { tag: "role", expr: "^web$" } });
      assert.equal(toHex(encodeQueryFilter(r.value)), v.hex, path);
    } else if (v.name.startsWith("tags_")) {
      const r = decodeTags(bytes);
      assert.ok(r.ok, path);
      const want = v.name === "tags_empty" ? [] : [["role", "web"]];
      assert.deepEqual([...r.value], want, path);
      if (v.name !== "tags_protocol2_legacy") assert.equal(toHex(encodeTags(r.value)), v.hex, path);
    } else if (v.name === "ack_payload_initial_coordinate") {
      const r = decodeCoordinatePayload(bytes);
      assert.ok(r.ok, path);
      assert.deepEqual(r.value, { vec: [0, 0, 0, 0, 0, 0, 0, 0], error: 1.5, adjustment: 0, height: 1e-5 });
      assert.equal(toHex(encodeCoordinatePayload(r.value)), v.hex, path);
    } else if (v.name === "conflictResponse_unknown") {
      const r = decodeSerfMessage(bytes);
      assert.ok(r.ok && r.value.type === "conflictResponse" && r.value.body === null, path);
      assert.equal(toHex(encodeSerfMessage(r.value)), v.hex, path);
    } else {
      checkSerf(v.decoded, bytes, path);
    }
  }
});

test("wire vectors: LZW matches Go's compress/lzw both ways", () => {
  const { vectors } = loadVectors("lzw.json");
  for (const v of vectors as Node[]) {
    const input = fromHex(v.inputHex);
    assert.equal(input.length, v.inputLen);
    assert.equal(toHex(lzwCompress(input)), v.lzwHex, `${v.name}: compress`);
    const d = lzwDecompress(fromHex(v.lzwHex));
    assert.ok(d.ok, `${v.name}: decompress`);
    assert.equal(toHex(d.value), v.inputHex, `${v.name}: decompress`);
    assert.equal(toHex(encodeCompress(input)), v.compressMessageHex, `${v.name}: compress message`);
  }
});

test("wire vectors: synthetic fixed-nonce AES-GCM vectors are reproduced exactly", async () => {
  const { vectors } = loadVectors("crypto-synthetic.json");
  for (const v of vectors as Node[]) {
    const key = fromHex(v.key);
    if (key.length === 24 && typeof (globalThis as { Deno?: unknown }).Deno !== "undefined") continue; // no AES-192 in Deno
    const one = new Keyring([key]);
    const plain = fromHex(v.plain);
    const wire = fromHex(v.wire);
    const nonce = () => fromHex(v.nonce);
    const withWrong = new Keyring([fromHex("ff".repeat(16)), key]);
    if (v.name.startsWith("stream")) {
      assert.equal(toHex(await encryptStream(one, plain, { nonce })), v.wire, v.name);
      const f = peekEncryptedStream(wire);
      assert.ok(f.status === "frame", v.name);
      assert.equal(toHex(f.header), v.aad, v.name);
      const d = await decryptStreamFrame(withWrong, f.header, f.blob);
      assert.ok(d.ok && toHex(d.value) === v.plain, v.name);
    } else {
      const version = wire[0] as 0 | 1;
      assert.equal(toHex(await encryptPayload(one, plain, { nonce, version })), v.wire, v.name);
      const d = await decryptPayload(withWrong, wire);
      assert.ok(d.ok && toHex(d.value) === v.plain, v.name);
    }
  }
});

test("wire: ping encodes with omitempty source fields", () => {
  assert.equal(toHex(encodePing({ seqNo: 1, node: "b" })), "0082a44e6f6465a162a55365714e6f01");
});
