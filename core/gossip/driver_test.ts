import { test } from "node:test";
import assert from "node:assert/strict";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createSerfDriver, GossipDriver, identityCodec } from "./driver.ts";
import type { GossipTransport, GossipTransportHandlers, StreamResult } from "./driver.ts";
import { lanProfile } from "./profiles.ts";
import { SwimCore } from "./swim.ts";
import { serfWireCodec } from "./wire/codec.ts";
import type { BytesGossipTypes, SwimEvent, SwimInput, SwimMessage } from "./swim.ts";

type M = SwimMessage<BytesGossipTypes>;

/** Records what the driver does; the test plays the network. */
class FakeTransport implements GossipTransport<M> {
  readonly localAddr = "10.0.0.1:7946";
  packets: { to: string; msg: M }[] = [];
  streams: { to: string; msg: M; expectReply: boolean; onResult: (r: StreamResult<M>) => void }[] = [];
  handlers: GossipTransportHandlers<M> | undefined;
  closed = false;
  throwOnSend = false;
  sendPacket(to: string, msg: M): void {
    if (this.throwOnSend) throw new Error("socket closed");
    this.packets.push({ to, msg });
  }
  sendStream(to: string, msg: M, options: { expectReply: boolean }, onResult: (r: StreamResult<M>) => void): void {
    this.streams.push({ to, msg, expectReply: options.expectReply, onResult });
  }
  listen(handlers: GossipTransportHandlers<M>): void {
    this.handlers = handlers;
  }
  close(): void {
    this.closed = true;
  }
}

function setup(onEvent?: (e: SwimEvent<BytesGossipTypes>) => void) {
  const clock = new SimClock();
  const sink = new CaptureSink();
  const core = new SwimCore<BytesGossipTypes>({
    name: "a", addr: "10.0.0.1:7946", meta: new Uint8Array(), profile: lanProfile, rng: new Rng(3), now: 0,
    logger: createLogger({ sink }),
  });
  const transport = new FakeTransport();
  const events: SwimEvent<BytesGossipTypes>[] = [];
  const driver = new GossipDriver<BytesGossipTypes, SwimInput<BytesGossipTypes>, SwimEvent<BytesGossipTypes>, M>({
    core, clock, transport, codec: identityCodec(), logger: createLogger({ sink, now: () => clock.now() }),
    onEvent: (e) => {
      events.push(e);
      onEvent?.(e);
    },
  });
  return { clock, sink, core, transport, driver, events };
}

test("driver: a join opens a stream; its reply is fed back and ends the join", () => {
  const { transport, driver, events } = setup();
  driver.start();
  driver.input({ kind: "join", addrs: ["10.0.0.2:7946"] });
  assert.equal(transport.streams.length, 1);
  const s = transport.streams[0]!;
  assert.equal(s.expectReply, true);
  assert.equal(s.msg.type, "pushPull");
  s.onResult({
    ok: true,
    reply: { type: "pushPull", join: true, nodes: [{ name: "b", addr: "10.0.0.2:7946", incarnation: 1, meta: new Uint8Array(), state: "alive", vsn: [1, 5, 2, 2, 5, 5] }] },
  });
  assert.ok(events.some((e) => e.kind === "join" && e.member.name === "b"));
  assert.ok(events.some((e) => e.kind === "joinDone" && e.contacted === 1));
});

test("driver: a failed stream becomes a join error", () => {
  const { transport, driver, events } = setup();
  driver.start();
  driver.input({ kind: "join", addrs: ["10.0.0.9:7946"] });
  transport.streams[0]!.onResult({ ok: false, error: "connection refused" });
  const done = events.find((e) => e.kind === "joinDone");
  assert.ok(done && done.kind === "joinDone" && done.contacted === 0 && done.errors[0] === "connection refused");
});

test("driver: incoming pings are acked, incoming push/pulls get a reply on the same stream", () => {
  const { transport, driver } = setup();
  driver.start();
  transport.handlers!.onPacket("10.0.0.2:7946", { type: "ping", seqNo: 7, node: "a" });
  // The ack may carry piggybacked broadcasts (a compound).
  const parts = (m: M): M[] => (m.type === "compound" ? m.parts : [m]);
  assert.deepEqual(transport.packets.map((p) => [p.to, parts(p.msg).find((x) => x.type === "ack")]), [["10.0.0.2:7946", { type: "ack", seqNo: 7 }]]);
  const reply = transport.handlers!.onStream("10.0.0.2:7946", { type: "pushPull", join: false, nodes: [] });
  assert.ok(reply && reply.type === "pushPull" && reply.nodes.some((n) => n.name === "a"));
  assert.equal(transport.handlers!.onStream("10.0.0.2:7946", { type: "ping", seqNo: 1, node: "other" }), undefined);
});

test("driver: ticks follow the core's deadlines on the clock; stop closes the transport", () => {
  const { clock, transport, driver, core } = setup();
  driver.start();
  driver.input({ kind: "join", addrs: ["10.0.0.2:7946"] });
  transport.streams[0]!.onResult({
    ok: true,
    reply: { type: "pushPull", join: true, nodes: [{ name: "b", addr: "10.0.0.2:7946", incarnation: 1, meta: new Uint8Array(), state: "alive", vsn: [1, 5, 2, 2, 5, 5] }] },
  });
  clock.advance(2_000);
  assert.ok(transport.packets.some((p) => p.to === "10.0.0.2:7946" && JSON.stringify(p.msg).includes('"ping"')), "probed b within 2 s");
  // Nobody answers: b becomes suspect after the probe interval.
  clock.advance(3_000);
  assert.equal(core.member("b")?.state, "suspect");
  driver.stop();
  assert.equal(transport.closed, true);
  const before = transport.packets.length;
  clock.advance(10_000);
  assert.equal(transport.packets.length, before, "no traffic after stop");
});

test("driver: a throwing event handler or transport is logged, not fatal", () => {
  let calls = 0;
  const { transport, driver, sink, events } = setup(() => {
    calls++;
    throw new Error("app bug");
  });
  driver.start();
  transport.throwOnSend = true;
  transport.handlers!.onPacket("10.0.0.2:7946", { type: "ping", seqNo: 1, node: "a" });
  transport.throwOnSend = false;
  driver.input({ kind: "join", addrs: ["10.0.0.9:7946"] });
  transport.streams[0]!.onResult({ ok: false, error: "refused" });
  assert.ok(calls >= 2 && events.some((e) => e.kind === "joinDone"));
  assert.match(sink.text(), /gossip send failed/);
  assert.match(sink.text(), /gossip event handler failed/);
});

test("driver: createSerfDriver runs a SerfCore on the wire codec (bytes in, bytes out)", () => {
  const clock = new SimClock();
  const sent: { to: string; bytes: Uint8Array }[] = [];
  let handlers: GossipTransportHandlers<Uint8Array> | undefined;
  const transport: GossipTransport<Uint8Array> = {
    localAddr: "10.0.0.1:7946",
    sendPacket: (to, bytes) => sent.push({ to, bytes }),
    sendStream: () => {},
    listen: (h) => { handlers = h; },
    close: () => {},
  };
  const events: string[] = [];
  const d = createSerfDriver({
    serf: { name: "a", addr: "10.0.0.1:7946", tags: { role: "web" }, profile: lanProfile, rng: new Rng(5) },
    clock, transport, logger: createLogger({ sink: new CaptureSink() }), onEvent: (e) => events.push(e.kind),
  });
  d.start();
  assert.deepEqual(events, ["member"]);
  // A memberlist ping (type 0) for us, as Go encodes it: 80 | map{Node:"a", SeqNo:3}.
  const ping = new Uint8Array([0x00, 0x82, 0xa4, 0x4e, 0x6f, 0x64, 0x65, 0xa1, 0x61, 0xa5, 0x53, 0x65, 0x71, 0x4e, 0x6f, 0x03]);
  handlers!.onPacket("10.0.0.2:7946", ping);
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.to, "10.0.0.2:7946");
  const decoded = serfWireCodec().decode(sent[0]!.bytes, { stream: false });
  assert.ok(decoded.ok, "our reply decodes");
  const flat = decoded.msgs.flatMap((m) => (m.type === "compound" ? m.parts : [m]));
  const ack = flat.find((m) => m.type === "ack");
  assert.ok(ack && ack.type === "ack" && ack.seqNo === 3 && ack.payload !== undefined, `ack with a coordinate: ${JSON.stringify(flat.map((m) => m.type))}`);
});
