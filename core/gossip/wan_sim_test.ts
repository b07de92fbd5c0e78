// Deterministic simulation of a WAN pool: the servers of three datacenters
// (3 + 3 + 1) gossiping with the WAN profile (memberlist DefaultWANConfig)
// over links with WAN latencies and loss between datacenters and LAN ones
// inside them. Each datacenter's servers join each other (the flood join)
// and one server per datacenter joins another datacenter once (`join -wan`).
// Checked: every server learns every server; no false failure under WAN
// loss; Vivaldi coordinates order the datacenters by their real distance
// (datacentersByDistance, what /v1/catalog/datacenters answers); a datacenter
// cut off is failed everywhere and routes to it say "unavailable" while the
// others still route; after the cut heals, Serf's reconnect brings it back.
// A failing seed is printed; replay it with SIM_SEED=n.

import { test } from "node:test";
import assert from "node:assert/strict";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { datacentersByDistance, WanRoutes } from "../rpc/wan_routes.ts";
import { distanceSeconds } from "./coordinate.ts";
import { GossipDriver, identityCodec } from "./driver.ts";
import { consulSerfTimings, wanProfile } from "./profiles.ts";
import { SerfCore } from "./serf.ts";
import type { SerfEvent, SerfInput, SerfTypes } from "./serf.ts";
import { simTransport } from "./sim_transport.ts";
import type { SimEnvelope } from "./sim_transport.ts";

interface WanNode {
  name: string;
  dc: string;
  addr: string;
  serf: SerfCore;
  driver: GossipDriver<SerfTypes, SerfInput, SerfEvent, unknown>;
  events: SerfEvent[];
}

const layout: Record<string, number> = { dc1: 3, dc2: 3, dc3: 1 };
/** One-way delay ranges between datacenters (ms); inside one: 1–5 ms. */
const wanDelay: Record<string, [number, number]> = { "dc1-dc2": [30, 50], "dc1-dc3": [110, 150], "dc2-dc3": [90, 120] };

class WanSim {
  readonly rng: Rng;
  readonly clock = new SimClock();
  readonly udp: SimNetwork<SimEnvelope<unknown>>;
  readonly tcp: SimNetwork<SimEnvelope<unknown>>;
  readonly sink = new CaptureSink();
  readonly nodes: WanNode[] = [];

  constructor(readonly seed: number, wanLoss: number) {
    this.rng = new Rng(seed);
    this.udp = new SimNetwork<SimEnvelope<unknown>>(this.clock, this.rng.fork(), { delayMs: [1, 5] });
    this.tcp = new SimNetwork<SimEnvelope<unknown>>(this.clock, this.rng.fork(), { delayMs: [1, 5] });
    let i = 0;
    for (const [dc, n] of Object.entries(layout)) {
      for (let k = 1; k <= n; k++) this.nodes.push(this.#start(`s${k}.${dc}`, dc, `10.${Object.keys(layout).indexOf(dc) + 1}.0.${++i}:8302`));
    }
    for (const a of this.nodes) {
      for (const b of this.nodes) {
        if (a.dc === b.dc) continue;
        const delayMs = wanDelay[`${a.dc}-${b.dc}`] ?? wanDelay[`${b.dc}-${a.dc}`]!;
        this.udp.setLink(a.addr, b.addr, { delayMs, loss: wanLoss });
        this.tcp.setLink(a.addr, b.addr, { delayMs });
      }
    }
  }

  #start(name: string, dc: string, addr: string): WanNode {
    const logger = createLogger({ sink: this.sink, level: "info", name, now: () => this.clock.now() });
    const serf = new SerfCore({
      name,
      addr,
      tags: { role: "consul", dc, port: "8300" },
      profile: wanProfile,
      timings: consulSerfTimings,
      rng: this.rng.fork(),
      logger,
      now: this.clock.now(),
    });
    const node: WanNode = { name, dc, addr, serf, events: [], driver: undefined! };
    node.driver = new GossipDriver<SerfTypes, SerfInput, SerfEvent, unknown>({
      core: serf,
      clock: this.clock,
      transport: simTransport<unknown>(this.clock, this.udp, this.tcp, addr),
      codec: identityCodec<SerfTypes>(),
      logger,
      onEvent: (e) => node.events.push(e),
    });
    node.driver.start();
    return node;
  }

  inDc(dc: string): WanNode[] {
    return this.nodes.filter((n) => n.dc === dc);
  }

  seesAllAlive(among: readonly WanNode[] = this.nodes): boolean {
    return among.every((a) => among.every((b) => a.serf.memberStatus(b.name) === "alive"));
  }

  runUntil(pred: () => boolean, maxMs: number, what: string): void {
    const until = this.clock.now() + maxMs;
    while (!pred() && this.clock.now() < until) this.clock.advance(Math.min(100, until - this.clock.now()));
    if (!pred()) assert.fail(`${what} not reached within ${maxMs} ms; ${this.context()}`);
  }

  /** The WAN routes a server builds from its own view of the pool. */
  routesOf(n: WanNode): WanRoutes {
    return new WanRoutes({
      localDatacenter: n.dc,
      servers: () => n.serf.members().map((m) => ({ name: m.name, datacenter: m.tags.dc ?? "", address: `${m.addr.split(":")[0]}:8300`, status: m.status })),
      rng: new Rng(this.seed),
    });
  }

  /** Datacenters by median estimated RTT from `n`, as Catalog.ListDatacenters orders them. */
  datacentersFrom(n: WanNode): string[] {
    const mine = n.serf.coordinate();
    return datacentersByDistance(n.dc, n.serf.members().map((m) => ({ name: m.name, datacenter: m.tags.dc ?? "" })), (node) => {
      const c = node === n.name ? mine : n.serf.coordinateOf(node);
      return mine && c ? distanceSeconds(mine, c) * 1_000 : undefined;
    });
  }

  context(): string {
    const view = this.nodes.map((n) => `${n.name}: ${n.serf.members().map((m) => `${m.name}=${m.status}`).join(" ")}`).join("\n");
    return `seed=${this.seed} (replay: SIM_SEED=${this.seed}) t=${this.clock.now()}\n${view}\n${this.sink.text().split("\n").slice(-20).join("\n")}`;
  }
}

test("wan sim: three datacenters over WAN latencies and 5% loss converge, order datacenters by RTT, fail a cut-off datacenter and get it back", () => {
  for (const seed of seeds(8)) {
    const sim = new WanSim(seed, 0.05);
    // The flood join inside each datacenter, then one join -wan per datacenter.
    for (const dc of Object.keys(layout)) {
      const [first, ...rest] = sim.inDc(dc);
      for (const n of rest) n.driver.input({ kind: "join", addrs: [first!.addr] });
    }
    sim.inDc("dc2")[0]!.driver.input({ kind: "join", addrs: [sim.inDc("dc1")[0]!.addr] });
    sim.inDc("dc3")[0]!.driver.input({ kind: "join", addrs: [sim.inDc("dc2")[1]!.addr] });
    sim.runUntil(() => sim.seesAllAlive(), 180_000, "every server sees every server alive");

    // Ten minutes of WAN loss: the WAN profile's suspicion (x6, 5 s probes) keeps every server alive.
    sim.clock.advance(600_000);
    for (const n of sim.nodes) {
      const failed = n.events.filter((e) => e.kind === "member" && e.type === "failed");
      assert.equal(failed.length, 0, `false failure seen by ${n.name}: ${JSON.stringify(failed)}; ${sim.context()}`);
    }
    // Vivaldi has learned the geometry: from dc1, dc2 (40 ms) is nearer than dc3 (130 ms); from dc3, dc2 is nearest.
    for (const n of sim.inDc("dc1")) assert.deepEqual(sim.datacentersFrom(n), ["dc1", "dc2", "dc3"], `${n.name}; seed=${seed}`);
    for (const n of sim.inDc("dc3")) assert.deepEqual(sim.datacentersFrom(n), ["dc3", "dc2", "dc1"], `${n.name}; seed=${seed}`);
    const dc1s = sim.inDc("dc1")[0]!;
    const routes = sim.routesOf(dc1s);
    const dc2Route = routes.route("dc2");
    assert.ok(dc2Route.kind === "servers" && dc2Route.addresses.length === 3, `seed=${seed}`);

    // dc3 cut off (its links to everyone dropped both ways): failed in every other server's view.
    const others = sim.nodes.filter((n) => n.dc !== "dc3").map((n) => n.addr);
    const dc3 = sim.inDc("dc3").map((n) => n.addr);
    sim.udp.partition(others, dc3);
    sim.tcp.partition(others, dc3);
    sim.runUntil(() => sim.nodes.filter((n) => n.dc !== "dc3").every((n) => n.serf.memberStatus("s1.dc3") === "failed"), 180_000, "s1.dc3 failed everywhere");
    const cut = sim.routesOf(dc1s);
    assert.deepEqual(cut.route("dc3"), { kind: "unavailable" }, "known, no server: Remote DC has no server currently reachable");
    assert.equal(cut.route("dc2").kind, "servers", "the other datacenters still route");
    assert.deepEqual(cut.route("dc9"), { kind: "unknown" });
    assert.ok(sim.seesAllAlive(sim.nodes.filter((n) => n.dc !== "dc3")), `dc1 and dc2 unaffected; ${sim.context()}`);

    // Healed: Serf's reconnect (every 30 s) brings dc3 back without a new join.
    sim.udp.heal();
    sim.tcp.heal();
    sim.runUntil(() => sim.seesAllAlive(), 600_000, "dc3 back after the cut heals");
    assert.equal(sim.routesOf(dc1s).route("dc3").kind, "servers", `seed=${seed}`);
  }
});
