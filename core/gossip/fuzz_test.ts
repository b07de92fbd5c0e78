// Fuzz: gossip packets and streams into a running Serf node. The corpus is
// what our own encoders put on the wire while four nodes join, gossip, send
// user events and queries, change tags and leave (plus Go's captured
// vectors). Mutated bytes go through the driver (wire codec, then
// SerfCore.step {kind:"packet"|"stream"}), and decoded messages with
// same-typed but extreme field values go straight into the core. Nothing may
// throw; undecodable input must be reported as dropped; afterwards the node
// is still alive in its own view and still answers a ping. FUZZ_SEED=n
// replays one seed. (wire/robustness_test.ts fuzzes the decoders alone.)

import assert from "node:assert/strict";
import { test } from "node:test";
import { nullLogger } from "../log/mod.ts";
import { fuzzSeeds, hex, mutateBytes, mutateLeaves, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { GossipDriver } from "./driver.ts";
import type { GossipCodec, GossipTransportHandlers } from "./driver.ts";
import { consulSerfTimings, lanProfile } from "./profiles.ts";
import { SerfCore } from "./serf.ts";
import type { SerfEvent, SerfInput, SerfTypes } from "./serf.ts";
import type { SwimMessage } from "./swim.ts";
import { simTransport, type SimEnvelope } from "./sim_transport.ts";
import { serfWireCodec } from "./wire/codec.ts";
import { fromHex, loadVectors } from "./wire/_vectors.ts";

type Driver = GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>;
const tags = { role: "node", dc: "dc1", vsn: "2", id: "00000000-0000-4000-8000-000000000001" };

function serf(name: string, addr: string, clock: SimClock, rng: Rng, codec = serfWireCodec({ compress: false })): SerfCore {
  return new SerfCore({ name, addr, tags: { ...tags, id: `00000000-0000-4000-8000-${name.padStart(12, "0")}` }, profile: lanProfile, timings: consulSerfTimings, rng, logger: nullLogger(), now: clock.now(), measure: codec.measure });
}

/** Every packet and stream four nodes send while they join, gossip, fire events and queries, retag and leave. */
function recordCorpus(): { packets: Uint8Array[]; streams: Uint8Array[] } {
  const clock = new SimClock();
  const rng = new Rng(7);
  const udp = new SimNetwork<SimEnvelope<Uint8Array>>(clock, rng.fork(), { delayMs: [1, 5] });
  const tcp = new SimNetwork<SimEnvelope<Uint8Array>>(clock, rng.fork(), { delayMs: [1, 5] });
  const packets: Uint8Array[] = [];
  const streams: Uint8Array[] = [];
  const addrOf = (i: number) => `10.0.0.${i + 1}:8301`;
  const nodes: Driver[] = [];
  for (let i = 0; i < 4; i++) {
    const codec = serfWireCodec({ compress: i % 2 === 0 });
    const transport = simTransport<Uint8Array>(clock, udp, tcp, addrOf(i), {
      filterPacket: (_from, _to, msg) => (packets.push(msg), msg),
      onStreamSent: (_from, _to, msg) => void streams.push(msg),
    });
    const d: Driver = new GossipDriver({ core: serf(`n${i}`, addrOf(i), clock, rng.fork(), codec), clock, transport, codec: codec as GossipCodec<SerfTypes, Uint8Array>, logger: nullLogger() });
    d.start();
    nodes.push(d);
  }
  clock.advance(500);
  for (let i = 1; i < 4; i++) nodes[i]!.input({ kind: "join", addrs: [addrOf(0)] });
  clock.advance(3_000);
  nodes[1]!.input({ kind: "userEvent", name: "deploy", payload: new TextEncoder().encode("v2"), coalesce: false });
  nodes[2]!.input({ kind: "query", name: "ping", payload: new Uint8Array([1, 2, 3]), timeoutMs: 500 } as never);
  nodes[3]!.input({ kind: "setTags", tags: { ...tags, extra: "é" } });
  clock.advance(2_000);
  nodes[3]!.input({ kind: "leave" });
  clock.advance(3_000);
  for (const d of nodes) d.stop();
  return { packets, streams };
}

function vectorCorpus(): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const f of ["udp-ping-ack.json", "udp-gossip-alive-compound.json", "udp-user-events.json", "udp-queries.json", "tcp-pushpull-compressed.json", "tcp-pushpull-uncompressed.json"]) {
    for (const v of loadVectors(f).vectors) {
      if (v.hex) out.push(fromHex(v.hex));
      if (v.clientToServer) out.push(fromHex(v.clientToServer.hex), fromHex(v.serverToClient.hex));
    }
  }
  return out;
}

const odd = ["10.0.0.9:8301", "10.0.0.2:8301", "", "garbage", "[::1]:8301", "1.2.3.4:99999", "10.0.0.1:8301"];

test("gossip fuzz: mutated packets and streams, and extreme field values, never throw out of the driver or the Serf core", { timeout: 60_000 }, () => {
  const recorded = recordCorpus();
  assert.ok(recorded.packets.length > 50 && recorded.streams.length > 3, `recorded ${recorded.packets.length} packets, ${recorded.streams.length} streams`);
  const bytes = [...recorded.packets, ...recorded.streams, ...vectorCorpus()];
  const probe = serfWireCodec();
  const decoded: SwimMessage<SerfTypes>[] = [];
  for (const b of bytes) {
    for (const stream of [false, true]) {
      const r = probe.decode(b, { stream });
      if (r.ok) decoded.push(...r.msgs);
    }
  }
  assert.ok(decoded.length > 50);

  for (const seed of fuzzSeeds(4)) {
    const rng = new Rng(seed);
    const clock = new SimClock();
    const codec = serfWireCodec({ compress: rng.chance(0.5) });
    const core = serf("victim", "10.0.0.1:8301", clock, rng.fork(), codec);
    let handlers: GossipTransportHandlers<Uint8Array> | undefined;
    const sent: Uint8Array[] = [];
    const driver: Driver = new GossipDriver({
      core,
      clock,
      transport: {
        localAddr: "10.0.0.1:8301",
        sendPacket: (_to, payload) => void sent.push(payload),
        sendStream: (_to, payload, _o, onResult) => {
          sent.push(payload);
          onResult(rng.chance(0.5) ? { ok: false, error: "refused", refused: true } : { ok: true, reply: mutateBytes(rng, rng.pick(recorded.streams)) });
        },
        listen: (h) => void (handlers = h),
        close: () => {},
      },
      codec: codec as GossipCodec<SerfTypes, Uint8Array>,
      logger: nullLogger(),
    });
    driver.start();
    driver.input({ kind: "join", addrs: ["10.0.0.2:8301"] });
    let garbage = 0;
    for (let i = 0; i < 400; i++) {
      const from = rng.pick(odd);
      const kind = rng.int(3);
      const what = replayHint(seed, i);
      try {
        if (kind === 2) {
          // A decoded message with extreme values of the right types, straight into the core.
          const msg = mutateLeaves(rng, rng.pick(decoded)) as SwimMessage<SerfTypes>;
          core.step({ kind: rng.chance(0.5) ? "packet" : "stream", now: clock.now(), from, msg });
          core.ready();
        } else {
          const input = mutateBytes(rng, rng.pick(kind === 0 ? bytes : recorded.streams), { corpus: bytes });
          if (kind === 0) {
            const took = handlers!.onPacket(from, input);
            const decodes = codec.decode(input, { stream: false }).ok;
            if (!decodes) {
              garbage++;
              assert.equal(took, false, `${what}: an undecodable packet was not reported as dropped: ${hex(input)}`);
            }
          } else handlers!.onStream(from, input);
        }
        if (rng.chance(0.1)) clock.advance(rng.pick([10, 200, 1_000, 5_000]));
      } catch (err) {
        assert.fail(`${what}: ${err instanceof Error ? err.stack : String(err)}`);
      }
    }
    assert.ok(garbage > 0, `seed ${seed}: some input was garbage`);
    // Still itself, still answering: a ping to it gets an ack.
    clock.advance(10_000);
    assert.equal(core.memberStatus("victim"), "alive", `seed ${seed}: the node no longer sees itself alive (replay: FUZZ_SEED=${seed})`);
    for (const m of core.members()) assert.ok(typeof m.name === "string" && typeof m.addr === "string", `seed ${seed}: member ${JSON.stringify(m)}`);
    sent.length = 0;
    const ping = codec.encode({ type: "ping", seqNo: 4242, node: "victim", sourceAddr: "10.0.0.9:8301", sourceNode: "pinger" }, { stream: false });
    handlers!.onPacket("10.0.0.9:8301", ping);
    clock.advance(1);
    const acked = sent.some((p) => {
      const r = codec.decode(p, { stream: false });
      return r.ok && r.msgs.some((m) => m.type === "ack" && m.seqNo === 4242);
    });
    assert.ok(acked, `seed ${seed}: no ack to a ping after the fuzzing (replay: FUZZ_SEED=${seed})`);
    driver.stop();
  }
});
