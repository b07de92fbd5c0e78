import { test } from "node:test";
import assert from "node:assert/strict";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { GossipDriver, identityCodec } from "./driver.ts";
import type { GossipTransport, StreamResult } from "./driver.ts";
import { lanProfile } from "./profiles.ts";
import { pushPullScaleMs, SwimCore, verifyProtocol } from "./swim.ts";
import type { BytesGossipTypes, SwimEvent, SwimInput, SwimMessage, SwimSend } from "./swim.ts";

type M = SwimMessage<BytesGossipTypes>;
type Env = { kind: "packet"; msg: M } | { kind: "stream"; msg: M; reply?: (r: StreamResult<M>) => void };

function simTransport(net: SimNetwork<Env>, tcp: SimNetwork<Env>, addr: string): GossipTransport<M> {
  return {
    localAddr: addr,
    sendPacket: (to, msg) => net.send(addr, to, { kind: "packet", msg }),
    sendStream: (to, msg, opts, onResult) => {
      if (!tcp.isConnected(addr, to)) {
        onResult({ ok: false, error: `Cannot connect to "${to}"` });
        return;
      }
      tcp.send(addr, to, { kind: "stream", msg, reply: opts.expectReply ? onResult : undefined });
    },
    listen: (h) => {
      net.attach(addr, (from, env) => { if (env.kind === "packet") h.onPacket(from, env.msg); });
      tcp.attach(addr, (from, env) => {
        if (env.kind !== "stream") return;
        const reply = h.onStream(from, env.msg);
        if (env.reply) {
          const cb = env.reply;
          if (reply === undefined) cb({ ok: true, reply: undefined });
          else tcp.send(addr, from, { kind: "stream", msg: reply, reply: undefined }), cb({ ok: true, reply });
        }
      });
    },
    close: () => { net.detach(addr); tcp.detach(addr); },
  };
}

test("swim: pushPullScale table", () => {
  for (const [n, want] of [[1, 30_000], [32, 30_000], [33, 60_000], [64, 60_000], [65, 90_000], [128, 90_000], [129, 120_000]] as const) {
    assert.equal(pushPullScaleMs(30_000, n), want, `n=${n}`);
  }
});

test("swim: small cluster joins, detects a crash, and sees a leave as left", () => {
  for (const seed of seeds(20)) {
    const rng = new Rng(seed);
    const clock = new SimClock();
    const net = new SimNetwork<Env>(clock, rng.fork(), { delayMs: [1, 5] });
    const tcp = new SimNetwork<Env>(clock, rng.fork(), { delayMs: [1, 5] });
    const sink = new CaptureSink();
    const names = ["a", "b", "c", "d", "e"];
    const nodes = names.map((name, i) => {
      const addr = `10.0.0.${i + 1}:7946`;
      const core = new SwimCore<BytesGossipTypes>({
        name, addr, meta: new Uint8Array(), profile: lanProfile, rng: rng.fork(), now: 0,
        logger: createLogger({ sink, level: "info", name, now: () => clock.now() }),
      });
      const events: SwimEvent<BytesGossipTypes>[] = [];
      const driver = new GossipDriver<BytesGossipTypes, SwimInput<BytesGossipTypes>, SwimEvent<BytesGossipTypes>, M>({
        core, clock, transport: simTransport(net, tcp, addr), codec: identityCodec(), logger: createLogger({ sink }),
        onEvent: (e) => events.push(e),
      });
      driver.start();
      return { name, addr, core, driver, events };
    });
    for (const n of nodes.slice(1)) n.driver.input({ kind: "join", addrs: [nodes[0]!.addr] });
    const ctx = () => `seed=${seed}\n${sink.text().slice(-3000)}`;
    const allAlive = () => nodes.every((n) => n.core.members().filter((m) => m.state === "alive").length === 5);
    assert.ok(clock.advanceUntil(allAlive, 30_000), `not converged; ${ctx()}`);
    // Crash e.
    nodes[4]!.driver.stop();
    const seenDead = () => nodes.slice(0, 4).every((n) => n.core.member("e")?.state === "dead");
    const crashAt = clock.now();
    assert.ok(clock.advanceUntil(seenDead, 60_000), `crash not detected; ${ctx()}`);
    // Lifeguard: with 5 nodes the suspicion lasts between 4 s and 24 s.
    assert.ok(clock.now() - crashAt >= 4_000, `declared dead too fast (${clock.now() - crashAt} ms); ${ctx()}`);
    // d leaves gracefully.
    nodes[3]!.driver.input({ kind: "leave", timeoutMs: 5_000 });
    assert.ok(clock.advanceUntil(() => nodes[3]!.events.some((e) => e.kind === "leaveDone"), 10_000), ctx());
    nodes[3]!.driver.stop();
    const seenLeft = () => nodes.slice(0, 3).every((n) => n.core.member("d")?.state === "left");
    assert.ok(clock.advanceUntil(seenLeft, 30_000), `leave not seen; ${ctx()}`);
    for (const n of nodes.slice(0, 3)) {
      assert.equal(n.core.members().filter((m) => m.state === "alive").length, 3, ctx());
    }
  }
});

test("swim: verifyProtocol accepts compatible versions and names the first incompatible node", () => {
  const n = (name: string, vsn: number[], state: "alive" | "dead" = "alive") => ({ name, state, vsn });
  const serf = [1, 5, 2, 2, 5, 5];
  const consul = [1, 5, 2, 2, 5, 4];
  assert.equal(verifyProtocol([n("a", serf)], [n("b", consul)]), undefined);
  assert.equal(verifyProtocol([n("a", [])], [n("b", serf)]), 'Node "a" protocol version (0) is incompatible: [1, 5]');
  assert.match(verifyProtocol([n("a", [3, 5, 3, 2, 5, 5])], [n("b", serf)]) ?? "", /Node "b" protocol version \(2\) is incompatible: \[3, 5\]/);
  assert.equal(verifyProtocol([n("a", [1, 5, 2, 5, 5, 5])], [n("b", consul)]), 'Node "b" delegate protocol version (4) is incompatible: [5, 5]');
  // Dead nodes don't narrow the range but must still fit it.
  assert.equal(verifyProtocol([n("a", [9, 9, 3, 2, 5, 5], "dead")], [n("b", serf)]), undefined);
  assert.equal(verifyProtocol([n("a", [1, 5, 6, 2, 5, 5], "dead")], [n("b", serf)]), 'Node "a" protocol version (6) is incompatible: [1, 5]');
});

test("swim: a join push/pull with an incompatible node fails the join and merges nothing", () => {
  const mk = (name: string, addr: string, vsn?: number[]) =>
    new SwimCore<BytesGossipTypes>({ name, addr, meta: new Uint8Array(), vsn, profile: lanProfile, rng: new Rng(1), now: 0, logger: createLogger({ sink: new CaptureSink() }) });
  const a = mk("a", "10.0.0.1:7946");
  const b = mk("b", "10.0.0.2:7946", [1, 1, 1, 2, 5, 5]);
  a.ready();
  b.ready();
  b.step({ kind: "join", now: 1, addrs: [a.addr] });
  const req = b.ready().sends[0]!;
  assert.ok(req.requestId !== undefined && req.msg.type === "pushPull");
  a.step({ kind: "stream", now: 2, from: b.addr, msg: req.msg, streamId: 1 });
  const reply = a.ready().sends.find((x) => x.replyTo === 1)!;
  assert.equal(a.member("b"), undefined, "server rejected the state too");
  b.step({ kind: "stream", now: 3, from: a.addr, msg: reply.msg, requestId: req.requestId });
  const done = b.ready().events.find((e) => e.kind === "joinDone");
  assert.ok(done && done.kind === "joinDone" && done.contacted === 0 && /incompatible/.test(done.errors[0] ?? ""), JSON.stringify(done));
  assert.equal(b.member("a"), undefined);
});

/** A core at 10.0.0.1 ("a") that knows the given alive members (by a push/pull from the first). */
function coreKnowing(members: { name: string; addr: string }[]): SwimCore<BytesGossipTypes> {
  const a = new SwimCore<BytesGossipTypes>({ name: "a", addr: "10.0.0.1:7946", meta: new Uint8Array(), profile: lanProfile, rng: new Rng(7), now: 0, logger: createLogger({ sink: new CaptureSink() }) });
  const nodes = members.map((m) => ({ name: m.name, addr: m.addr, incarnation: 1, meta: new Uint8Array(), state: "alive" as const, vsn: [1, 5, 2, 2, 5, 5] }));
  a.step({ kind: "stream", now: 0, from: members[0]!.addr, msg: { type: "pushPull", join: false, nodes }, streamId: 1 });
  a.ready();
  return a;
}

/** Raise a's awareness score by making it refute `times` suspicions about itself. */
function raiseAwareness(a: SwimCore<BytesGossipTypes>, from: string, times: number): void {
  for (let i = 0; i < times; i++) {
    a.step({ kind: "packet", now: 0, from: "10.0.0.2:7946", msg: { type: "suspect", node: "a", incarnation: a.incarnation, from } });
  }
  a.ready();
}

/** The probe pings in a batch of sends (direct UDP pings, alone or first in a compound). */
function probePings(sends: SwimSend<BytesGossipTypes>[]): { to: string; seqNo: number }[] {
  const out: { to: string; seqNo: number }[] = [];
  for (const s of sends) {
    if (s.reliable) continue;
    const m = s.msg.type === "compound" ? s.msg.parts[0]! : s.msg;
    if (m.type === "ping") out.push({ to: s.to, seqNo: m.seqNo });
  }
  return out;
}

test("swim: the probe ticker keeps its period when the awareness score is up and probes succeed (memberlist probe ticker)", () => {
  const peers = [{ name: "b", addr: "10.0.0.2:7946" }, { name: "c", addr: "10.0.0.3:7946" }];
  const a = coreKnowing(peers);
  raiseAwareness(a, "b", 3);
  assert.equal(a.awarenessScore, 3);
  const starts: number[] = [];
  const scores: number[] = [];
  while (starts.length < 6) {
    const now = a.nextDeadline();
    a.step({ kind: "tick", now });
    for (const p of probePings(a.ready().sends)) {
      starts.push(now);
      a.step({ kind: "packet", now: now + 2, from: p.to, msg: { type: "ack", seqNo: p.seqNo } });
      scores.push(a.awarenessScore);
    }
  }
  // Each acked probe lowers the score by one; the probes stay one interval apart
  // (cairn used to wait (score + 1) intervals between them, probing less than memberlist).
  assert.deepEqual(scores, [2, 1, 0, 0, 0, 0]);
  assert.deepEqual(starts.slice(1).map((t, i) => t - starts[i]!), [1000, 1000, 1000, 1000, 1000]);
});

test("swim: a failing probe waits the awareness-scaled interval and the next probe starts as it ends (the tick that came meanwhile)", () => {
  const a = coreKnowing([{ name: "b", addr: "10.0.0.2:7946" }]);
  raiseAwareness(a, "b", 3);
  const starts: number[] = [];
  while (starts.length < 2) {
    const now = a.nextDeadline();
    a.step({ kind: "tick", now });
    if (probePings(a.ready().sends).length > 0) starts.push(now); // b never answers
  }
  // 4 x 1000 ms for a probe at score 3; ticks at +1000, +2000, +3000 collapse into one that waits for it.
  assert.equal(starts[1]! - starts[0]!, 4000);
  assert.equal(a.member("b")?.state, "suspect");
});

test("swim: a repair push/pull carries only our own entry; a join carries everyone", () => {
  const a = coreKnowing([{ name: "b", addr: "10.0.0.2:7946" }, { name: "c", addr: "10.0.0.3:7946" }]);
  a.step({ kind: "pushPull", now: 1, to: "10.0.0.2:7946" });
  const repair = a.ready().sends.find((x) => x.reliable && x.msg.type === "pushPull");
  assert.ok(repair?.msg.type === "pushPull");
  assert.deepEqual(repair.msg.nodes.map((n) => n.name), ["a"]);
  a.step({ kind: "join", now: 2, addrs: ["10.0.0.3:7946"] });
  const join = a.ready().sends.find((x) => x.reliable && x.msg.type === "pushPull");
  assert.ok(join?.msg.type === "pushPull");
  assert.deepEqual(join.msg.nodes.map((n) => n.name).sort(), ["a", "b", "c"]);
});

test("swim: a lone node merges its join reply quietly; a node that knew others passes the news on", () => {
  const alive = (name: string, i: number) => ({ name, addr: `10.0.0.${i}:7946`, incarnation: 1, meta: new Uint8Array(), state: "alive" as const, vsn: [1, 5, 2, 2, 5, 5] });
  const hubState = [alive("h", 9), alive("x", 10), alive("y", 11)];
  const joinThroughHub = (a: SwimCore<BytesGossipTypes>) => {
    a.step({ kind: "join", now: 5, addrs: ["10.0.0.9:7946"] });
    const req = a.ready().sends.find((x) => x.reliable && x.msg.type === "pushPull")!;
    const queued = a.queuedBroadcasts;
    a.step({ kind: "stream", now: 6, from: "10.0.0.9:7946", msg: { type: "pushPull", join: true, nodes: hubState }, requestId: req.requestId });
    assert.ok(["h", "x", "y"].every((n) => a.member(n)?.state === "alive"));
    return a.queuedBroadcasts - queued;
  };
  // Alone: everything in the reply came from the hub, which told everyone it can reach.
  const lone = new SwimCore<BytesGossipTypes>({ name: "a", addr: "10.0.0.1:7946", meta: new Uint8Array(), profile: lanProfile, rng: new Rng(3), now: 0, logger: createLogger({ sink: new CaptureSink() }) });
  lone.ready();
  assert.equal(joinThroughHub(lone), 0);
  // Already in a pool (b): b's side has not heard of h, x and y (memberlist queues them all).
  assert.equal(joinThroughHub(coreKnowing([{ name: "b", addr: "10.0.0.2:7946" }])), 3);
});

test("swim: probe rounds reach every member when the probe ticks fall behind the periods", () => {
  const peers = ["b", "c", "d", "e"].map((name, i) => ({ name, addr: `10.0.0.${i + 2}:7946` }));
  const a = coreKnowing(peers);
  // Ticks come only every other period (a blocked event loop), and every probe is acked.
  const targets: string[] = [];
  for (let now = 10_000; targets.length < 8; now += 2 * lanProfile.probeIntervalMs) {
    a.step({ kind: "tick", now });
    for (const p of probePings(a.ready().sends)) {
      targets.push(p.to);
      a.step({ kind: "packet", now: now + 1, from: p.to, msg: { type: "ack", seqNo: p.seqNo } });
    }
  }
  // Each run of four consecutive probes covers all four peers.
  for (let i = 0; i + 4 <= targets.length; i++) {
    assert.equal(new Set(targets.slice(i, i + 4)).size, 4, `probes ${targets.join(" ")}`);
  }
});

test("swim: a refused TCP fallback ping ends the probe at once; a timed-out one waits the probe interval", () => {
  const peers = [{ name: "b", addr: "10.0.0.2:7946" }, { name: "c", addr: "10.0.0.3:7946" }, { name: "d", addr: "10.0.0.4:7946" }];
  for (const refused of [true, false]) {
    const a = coreKnowing(peers);
    // Run until a probes b, then let the direct ping go unanswered.
    let start = Number.NaN;
    while (Number.isNaN(start)) {
      const now = a.nextDeadline();
      a.step({ kind: "tick", now });
      const sends = a.ready().sends;
      if (probePings(sends).some((p) => p.to === "10.0.0.2:7946")) start = now;
      else for (const p of probePings(sends)) a.step({ kind: "packet", now, from: p.to, msg: { type: "ack", seqNo: p.seqNo } });
    }
    a.step({ kind: "tick", now: start + lanProfile.probeTimeoutMs });
    const fallback = a.ready().sends.find((x) => x.reliable && x.to === "10.0.0.2:7946" && x.msg.type === "ping");
    assert.ok(fallback?.requestId !== undefined, "TCP fallback ping sent with the indirect probes");
    const at = start + lanProfile.probeTimeoutMs + 1;
    a.step({ kind: "streamError", now: at, requestId: fallback.requestId, error: "connection refused", refused });
    assert.equal(a.member("b")?.state, refused ? "suspect" : "alive");
    // No Lifeguard penalty for the nacks that were not due yet.
    if (refused) assert.equal(a.awarenessScore, 0);
    a.step({ kind: "tick", now: start + lanProfile.probeIntervalMs });
    assert.equal(a.member("b")?.state, "suspect");
  }
});
