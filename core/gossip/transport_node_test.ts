// Two real transports on 127.0.0.1 (port 0): ping/ack over UDP, push/pull
// over TCP, plain and encrypted; garbage, undecryptable and oversized input
// is counted and dropped. Waits are event-driven with a 5 s guard.

import assert from "node:assert/strict";
import * as dgram from "node:dgram";
import * as net from "node:net";
import { after, test } from "node:test";
import { nullLogger } from "../log/mod.ts";
import { until, within } from "../testing/until.ts";
import { createNodeTransport, splitHostPort } from "./transport_node.ts";
import type { NodeTransport, NodeTransportOptions } from "./transport_node.ts";
import type { StreamResult } from "./driver.ts";
import {
  decodePacket,
  encodeAck,
  encodePing,
  encodePushPull,
  encodeStream,
  parseStream,
} from "./wire/memberlist.ts";
import { Keyring } from "./wire/crypto.ts";
import type { PushPull } from "./wire/messages.ts";

const open: NodeTransport[] = [];
after(() => {
  for (const t of open) t.close();
});

async function make(extra: Partial<NodeTransportOptions> = {}): Promise<NodeTransport> {
  const t = await createNodeTransport({ bindAddr: "127.0.0.1", bindPort: 0, logger: nullLogger(), ...extra });
  open.push(t);
  return t;
}

const vsn = new Uint8Array([1, 5, 2, 2, 5, 5]);
function state(name: string, port: number): PushPull {
  return {
    join: true,
    nodes: [{ name, addr: new Uint8Array([127, 0, 0, 1]), port, meta: new Uint8Array([0xff, 0x80]), incarnation: 1, state: 0, vsn }],
    userState: new Uint8Array([2, 0x80]),
  };
}

/** B answers pings with acks and push/pulls with its own state. */
function serve(b: NodeTransport): { packets: number } {
  const seen = { packets: 0 };
  b.listen({
    onPacket(from, bytes) {
      seen.packets++;
      for (const m of decodePacket(bytes).messages) {
        if (m.type === "ping") b.sendPacket(from, encodeAck({ seqNo: m.body.seqNo, payload: null }));
      }
    },
    onStream(_from, bytes) {
      const r = parseStream(bytes);
      if (r.status !== "ok" || r.message.type !== "pushPull") return undefined;
      return encodeStream(encodePushPull(state("b", b.port)), { compress: true });
    },
  });
  return seen;
}

async function pingAck(a: NodeTransport, b: NodeTransport): Promise<void> {
  const acked = new Promise<number>((resolve) => {
    a.listen({
      onPacket(_from, bytes) {
        for (const m of decodePacket(bytes).messages) if (m.type === "ackResp") resolve(m.body.seqNo);
      },
      onStream: () => undefined,
    });
  });
  a.sendPacket(b.localAddr, encodePing({ seqNo: 77, node: "b", sourceNode: "a" }));
  assert.equal(await within(acked, "ack"), 77);
}

async function pushPull(a: NodeTransport, b: NodeTransport): Promise<void> {
  const reply = await within(
    new Promise<StreamResult<Uint8Array>>((resolve) =>
      a.sendStream(b.localAddr, encodeStream(encodePushPull(state("a", a.port)), { compress: true }), { expectReply: true }, resolve),
    ),
    "push/pull reply",
  );
  assert.ok(reply.ok && reply.reply, `push/pull failed: ${!reply.ok ? reply.error : "no reply"}`);
  const r = parseStream(reply.reply);
  assert.ok(r.status === "ok" && r.message.type === "pushPull");
  assert.equal(r.message.body.nodes[0]!.name, "b");
  assert.equal(r.message.body.nodes[0]!.port, b.port);
}

test("transport: UDP and TCP share the chosen port; localAddr names it", async () => {
  const a = await make();
  const addr = splitHostPort(a.localAddr)!;
  assert.equal(addr.host, "127.0.0.1");
  assert.equal(addr.port, a.port);
  assert.ok(a.port > 0);
  // Binding the same port again fails (TCP taken).
  await assert.rejects(createNodeTransport({ bindAddr: "127.0.0.1", bindPort: a.port, logger: nullLogger() }));
});

test("transport: plaintext ping/ack over UDP and push/pull over TCP", async () => {
  const a = await make();
  const b = await make();
  serve(b);
  await pingAck(a, b);
  await pushPull(a, b);
  assert.equal(b.stats.streamsAccepted, 1);
});

test("transport: encrypted ping/ack and push/pull; plaintext is rejected", async () => {
  const key = new Uint8Array(32).map((_, i) => i);
  const other = new Uint8Array(16).fill(9);
  // Each side encrypts with its primary and must try its second key to read the other.
  const a = await make({ keyring: new Keyring([key, other]) });
  const b = await make({ keyring: new Keyring([other, key]) });
  serve(b);
  await pingAck(a, b);
  await pushPull(a, b);

  // A plaintext node's datagram and stream are refused by the encrypted node.
  const plain = await make();
  plain.sendPacket(b.localAddr, encodePing({ seqNo: 5, node: "b" }));
  await until(() => b.stats.packetsDecryptFailed === 1, "decrypt failure count");
  const r = await within(
    new Promise<StreamResult<Uint8Array>>((resolve) =>
      plain.sendStream(b.localAddr, encodePushPull(state("p", plain.port)), { expectReply: true }, resolve),
    ),
    "rejected push/pull",
  );
  // b answers with an encrypted errResp that the plaintext node cannot read.
  assert.equal(r.ok, false);
  assert.equal(b.stats.streamsGarbage, 1);
});

test("transport: garbage datagrams and streams are counted and dropped", async () => {
  const b = await make({ maxStreamBytes: 1000 });
  const seen = serve(b);
  const raw = dgram.createSocket("udp4");
  after(() => raw.close());
  const addr = splitHostPort(b.localAddr)!;
  for (const junk of [[0x63, 1, 2], [0x07, 5, 0], [0x0c, 0, 0, 0, 0, 0]]) {
    raw.send(new Uint8Array(junk), addr.port, addr.host);
  }
  raw.send(new Uint8Array(0), addr.port, addr.host);
  await until(() => b.stats.packetsGarbage === 3 && b.stats.packetsEmpty === 1, "garbage counters");
  assert.equal(seen.packets, 0);

  // A handler that decodes itself gets every datagram and reports the garbage.
  const c = await make({ dropUndecodablePackets: false });
  const got: number[] = [];
  c.listen({ onPacket: (_from, bytes) => (got.push(bytes[0]!), decodePacket(bytes).messages.length > 0), onStream: () => undefined });
  const cAddr = splitHostPort(c.localAddr)!;
  raw.send(new Uint8Array([0x63, 1, 2]), cAddr.port, cAddr.host);
  raw.send(encodePing({ seqNo: 1, node: "c" }), cAddr.port, cAddr.host);
  await until(() => got.length === 2, "both datagrams delivered");
  assert.equal(c.stats.packetsGarbage, 1);

  // An unknown stream type gets an errResp and is counted.
  const garbage = await rawStream(addr, new Uint8Array([0x63, 0x63, 0x63]));
  assert.equal(garbage[0], 0x09, "errResp is compressed like Go's");
  const e = parseStream(garbage);
  assert.ok(e.status === "ok" && e.message.type === "err");
  assert.equal(b.stats.streamsGarbage, 1);

  // A push/pull bigger than the cap closes the connection.
  const big = encodePushPull({ ...state("x", 1), userState: new Uint8Array(5000) });
  await rawStream(addr, big);
  await until(() => b.stats.streamsTooLarge === 1, "too-large counter");
});

function rawStream(addr: { host: string; port: number }, bytes: Uint8Array): Promise<Uint8Array> {
  return within(
    new Promise<Uint8Array>((resolve) => {
      const chunks: Uint8Array[] = [];
      const s = net.connect(addr.port, addr.host, () => s.write(bytes));
      s.on("data", (c: Uint8Array) => chunks.push(c));
      s.on("error", () => {});
      s.on("close", () => resolve(new Uint8Array(Buffer.concat(chunks))));
    }),
    "raw stream close",
  );
}

test("transport: a connection that stays silent is closed at the TCP timeout", async () => {
  const b = await make({ tcpTimeoutMs: 100 });
  serve(b);
  const addr = splitHostPort(b.localAddr)!;
  await rawStream(addr, new Uint8Array([0x06])); // header never completes
  assert.equal(b.stats.streamsTimedOut, 1);
});
