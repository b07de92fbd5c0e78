// Gossip warm-up: a client agent, before it starts, runs a few Serf nodes
// over the real wire codec on a virtual clock and an in-memory network, and
// throws them away.
//
// Why: a fresh process runs its gossip paths cold. Until V8 has allocated a
// function's feedback, gathered its inline caches and compiled it with the
// baseline compiler, the same decode, merge and encode run several times
// slower, and every agent pays that again in its own process. When 49
// agents joined one at once on a 2-core machine (scripts/bench/gossip.ts),
// the storm took clearly less CPU with this, and all-see-all came sooner.
// The cost is some CPU once at start and some resident memory after such a
// storm (baseline code and feedback, most of which the first real join would
// have made). Figures: docs/performance.md.
//
// Nothing leaves the process: the nodes' addresses exist only on the
// SimNetwork, and the SimClock has no real timers.
import { nullLogger } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { GossipDriver } from "./driver.ts";
import type { GossipCodec } from "./driver.ts";
import { consulSerfTimings, lanProfile } from "./profiles.ts";
import { SerfCore } from "./serf.ts";
import type { SerfEvent, SerfInput, SerfTypes, Tags } from "./serf.ts";
import { simTransport } from "./sim_transport.ts";
import type { SimEnvelope } from "./sim_transport.ts";
import { serfWireCodec } from "./wire/codec.ts";

type Driver = GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>;

/** Six nodes: enough for full push/pulls, compound packets and broadcast queues; more cost memory for little. */
export const warmUpNodes = 6;

export interface WarmUpResult {
  /** Every node saw every other alive (the paths a real join takes all ran). */
  converged: boolean;
}

/**
 * Joins `nodes` in-memory Serf nodes carrying `tags` (the agent's own shape
 * of metadata, so the same encodings run) to the first, lets them gossip for
 * a few virtual seconds, and stops them.
 */
export function warmUpGossip(options: { tags: Tags; nodes?: number }): WarmUpResult {
  const n = Math.max(2, options.nodes ?? warmUpNodes);
  const clock = new SimClock();
  const rng = new Rng(1);
  const udp = new SimNetwork<SimEnvelope<Uint8Array>>(clock, rng.fork(), { delayMs: [1, 5] });
  const tcp = new SimNetwork<SimEnvelope<Uint8Array>>(clock, rng.fork(), { delayMs: [1, 5] });
  const addrOf = (i: number) => `127.255.255.${i + 1}:8301`;
  const nodes: { name: string; serf: SerfCore; driver: Driver }[] = [];
  for (let i = 0; i < n; i++) {
    const addr = addrOf(i);
    const name = `cairn-warm-up-${i}`;
    const wire = serfWireCodec({ compress: false });
    const logger = nullLogger();
    const serf = new SerfCore({
      name,
      addr,
      tags: { ...options.tags, id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}` },
      profile: lanProfile,
      timings: consulSerfTimings,
      rng: rng.fork(),
      logger,
      now: clock.now(),
      measure: wire.measure,
    });
    const driver: Driver = new GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>({
      core: serf,
      clock,
      transport: simTransport<Uint8Array>(clock, udp, tcp, addr),
      codec: wire as GossipCodec<SerfTypes, Uint8Array>,
      logger,
      onEvent: () => {},
    });
    nodes.push({ name, serf, driver });
    driver.start();
  }
  clock.advance(1_000);
  for (let i = 1; i < n; i++) nodes[i]!.driver.input({ kind: "join", addrs: [addrOf(0)] });
  clock.advance(3_000);
  const converged = nodes.every((a) => nodes.every((b) => a.serf.memberStatus(b.name) === "alive"));
  for (const x of nodes) x.driver.stop();
  return { converged };
}
