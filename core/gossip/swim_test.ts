import { test } from "node:test";
import assert from "node:assert/strict";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { GossipDriver, identityCodec } from "./driver.ts";
import type { GossipTransport, StreamResult } from "./driver.ts";
import { lanProfile } from "./profiles.ts";
import { pushPullScaleMs, SwimCore } from "./swim.ts";
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
