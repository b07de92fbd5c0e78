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
import type { BytesGossipTypes, SwimEvent, SwimInput, SwimMessage } from "./swim.ts";

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
