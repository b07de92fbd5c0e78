// A GossipTransport on SimNetworks, for simulations and the start-up warm-up
// (warmup.ts): no sockets, no real timers.
import type { SimClock } from "../sim/sim_clock.ts";
import type { SimNetwork } from "../sim/sim_network.ts";
import type { GossipTransport, StreamResult } from "./driver.ts";
import { lanProfile } from "./profiles.ts";

/** What travels on the two networks. */
export type SimEnvelope<P> =
  | { kind: "packet"; msg: P }
  | { kind: "stream"; msg: P; reply?: (r: StreamResult<P>) => void }
  | { kind: "reply"; msg: P | undefined; reply: (r: StreamResult<P>) => void };

/** Test hooks (none in the warm-up). */
export interface SimTransportHooks<P> {
  /** Rewrite (or drop: undefined) a datagram as it arrives at `to`. */
  filterPacket?: (from: string, to: string, msg: P) => P | undefined;
  /** Told about every stream a node opens. */
  onStreamSent?: (from: string, to: string, msg: P) => void;
}

/**
 * A GossipTransport over two SimNetworks: lossy "UDP" and loss-free but
 * partitionable "TCP". A stream whose request or reply is cut (partition,
 * crashed host) fails after the TCP timeout, like a real connect/read would;
 * one to a killed process on a live host is refused (SimNetwork.refuseWhenDetached).
 */
export function simTransport<P>(
  clock: SimClock,
  udp: SimNetwork<SimEnvelope<P>>,
  tcp: SimNetwork<SimEnvelope<P>>,
  addr: string,
  hooks: SimTransportHooks<P> = {},
): GossipTransport<P> {
  return {
    localAddr: addr,
    sendPacket: (to, msg) => udp.send(addr, to, { kind: "packet", msg }),
    sendStream: (to, msg, opts, onResult) => {
      hooks.onStreamSent?.(addr, to, msg);
      if (!opts.expectReply) {
        tcp.send(addr, to, { kind: "stream", msg });
        onResult({ ok: true, reply: undefined });
        return;
      }
      let done = false;
      const finish = (r: StreamResult<P>) => {
        if (done) return;
        done = true;
        timer.cancel();
        onResult(r);
      };
      const timer = clock.setTimer(lanProfile.tcpTimeoutMs, () => finish({ ok: false, error: `i/o timeout talking to "${to}"` }));
      tcp.send(addr, to, { kind: "stream", msg, reply: finish }, () => finish({ ok: false, error: `dial tcp ${to}: connect: connection refused`, refused: true }));
    },
    listen: (h) => {
      udp.attach(addr, (from, env) => {
        if (env.kind !== "packet") return;
        const msg = hooks.filterPacket ? hooks.filterPacket(from, addr, env.msg) : env.msg;
        if (msg !== undefined) h.onPacket(from, msg);
      });
      tcp.attach(addr, (from, env) => {
        if (env.kind === "reply") {
          env.reply({ ok: true, reply: env.msg });
          return;
        }
        if (env.kind !== "stream") return;
        const reply = h.onStream(from, env.msg);
        if (env.reply) tcp.send(addr, from, { kind: "reply", msg: reply, reply: env.reply });
      });
    },
    close: () => {
      udp.detach(addr);
      tcp.detach(addr);
    },
  };
}
