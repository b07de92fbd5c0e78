// End-to-end wire compatibility with the real Debian `serf` agent (serf
// 0.9.4 / memberlist 0.2.2): our transport + codec join it by push/pull,
// decode its node list with tags and Serf state, get acks to UDP and TCP
// pings, and every packet it gossips to us decodes without errors. Then the
// same join with gossip encryption. Skipped when /usr/bin/serf is missing.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, test } from "node:test";
import { freePort, serf, serfBin, startSerf, type SerfAgent } from "./harness.ts";
import { until, within } from "../../core/testing/until.ts";
import { nullLogger } from "../../core/log/mod.ts";
import { systemClock } from "../../core/clock/mod.ts";
import { Rng } from "../../core/sim/rng.ts";
import { GossipDriver } from "../../core/gossip/driver.ts";
import { SerfCore } from "../../core/gossip/serf.ts";
import type { SerfEvent, SerfInput, SerfTypes } from "../../core/gossip/serf.ts";
import { lanProfile } from "../../core/gossip/profiles.ts";
import { serfWireCodec } from "../../core/gossip/wire/codec.ts";
import { createNodeTransport } from "../../core/gossip/transport_node.ts";
import type { NodeTransport } from "../../core/gossip/transport_node.ts";
import type { StreamResult } from "../../core/gossip/driver.ts";
import {
  decodeCoordinatePayload,
  decodePacket,
  decodeSerfMessage,
  decodeTags,
  encodeAck,
  encodePing,
  encodePushPull,
  encodeSerfMessage,
  encodeTags,
  Keyring,
  keyFromBase64,
  parseStream,
} from "../../core/gossip/wire/mod.ts";
import type { MemberlistMessage, PushPull, WireError } from "../../core/gossip/wire/mod.ts";

const skip = existsSync(serfBin) ? false : "serf binary not installed";

const transports: NodeTransport[] = [];
after(() => {
  for (const t of transports) t.close();
});

const agents: SerfAgent[] = [];

/** A serf agent tagged role=web on `port`, not waited for (the joins below retry until it answers). */
async function startWebSerf(name: string, port: number, extra: string[] = []): Promise<SerfAgent> {
  const s = await startSerf(name, { port, args: ["-tag", "role=web", "-log-level=debug", ...extra], wait: false });
  agents.push(s);
  return s;
}

/** Every serf agent's output so far, for failure messages. */
function serfOutput(): string {
  return agents.map((s) => `--- ${s.name} ---\n${s.proc.output()}`).join("\n");
}

const vsn = new Uint8Array([1, 5, 2, 2, 5, 5]);

function serfState(self: string): Uint8Array {
  return encodeSerfMessage({
    type: "pushPull",
    body: {
      lTime: 1,
      statusLTimes: new Map([[self, 0]]),
      leftMembers: [],
      eventLTime: 1,
      events: new Array(512).fill(null),
      queryLTime: 1,
    },
  });
}

function ourState(t: NodeTransport, name: string): PushPull {
  return {
    join: true,
    nodes: [{ name, addr: new Uint8Array([127, 0, 0, 1]), port: t.port, meta: encodeTags(new Map([["role", "ts"]])), incarnation: 1, state: 0, vsn }],
    userState: serfState(name),
  };
}

function sendStream(t: NodeTransport, to: string, payload: Uint8Array): Promise<StreamResult<Uint8Array>> {
  return new Promise((resolve) => t.sendStream(to, payload, { expectReply: true }, resolve));
}

/** Retries the join push/pull until the agent is up. */
async function joinPushPull(t: NodeTransport, to: string, name: string): Promise<PushPull> {
  const reply = await until(async () => {
    const r = await sendStream(t, to, encodePushPull(ourState(t, name)));
    if (!r.ok) throw new Error(r.error);
    return r.reply;
  }, `the join push/pull to ${to}`, { timeoutMs: 10_000, intervalMs: 100 }).catch((err: unknown) => {
    assert.fail(`${err instanceof Error ? err.message : String(err)}\n${serfOutput()}`);
  });
  const p = parseStream(reply);
  assert.ok(p.status === "ok" && p.message.type === "pushPull", `push/pull reply: ${JSON.stringify(p)}`);
  return p.message.body;
}

interface Inbox {
  messages: { from: string; msg: MemberlistMessage }[];
  errors: WireError[];
  waiters: { pred: (m: MemberlistMessage) => boolean; resolve: (m: MemberlistMessage) => void }[];
}

/** Collects every packet, answers the agent's pings so it keeps us alive. */
function listen(t: NodeTransport, name: string): Inbox {
  const box: Inbox = { messages: [], errors: [], waiters: [] };
  t.listen({
    onPacket(from, bytes) {
      const d = decodePacket(bytes);
      box.errors.push(...d.errors);
      for (const msg of d.messages) {
        box.messages.push({ from, msg });
        if (msg.type === "ping" && (msg.body.node === name || msg.body.node === "")) {
          t.sendPacket(from, encodeAck({ seqNo: msg.body.seqNo, payload: null }));
        }
        if (msg.type === "user") {
          const s = decodeSerfMessage(msg.body);
          if (!s.ok) box.errors.push(s.error);
        }
        box.waiters = box.waiters.filter((w) => (w.pred(msg) ? (w.resolve(msg), false) : true));
      }
    },
    onStream: () => undefined,
  });
  return box;
}

function waitFor(box: Inbox, pred: (m: MemberlistMessage) => boolean, what: string): Promise<MemberlistMessage> {
  const seen = box.messages.find((m) => pred(m.msg));
  if (seen) return Promise.resolve(seen.msg);
  return within(new Promise((resolve) => box.waiters.push({ pred, resolve })), what);
}

test("serf e2e: join a real serf agent, decode its state, ping it over UDP and TCP", { skip }, async () => {
  const port = await freePort();
  const s1Agent = await startWebSerf("s1", port);
  const serfAddr = s1Agent.addr;
  const t = await createNodeTransport({ bindAddr: "127.0.0.1", bindPort: 0, logger: nullLogger() });
  transports.push(t);
  const box = listen(t, "t1");

  const remote = await joinPushPull(t, serfAddr, "t1");
  assert.equal(remote.join, true);
  const s1 = remote.nodes.find((n) => n.name === "s1");
  assert.ok(s1, "agent lists itself");
  assert.equal(s1.port, port);
  assert.deepEqual([...s1.vsn], [1, 5, 2, 2, 5, 5]);
  const tags = decodeTags(s1.meta);
  assert.ok(tags.ok && tags.value.get("role") === "web", "agent tags decode");
  const state = decodeSerfMessage(remote.userState);
  assert.ok(state.ok && state.value.type === "pushPull", "serf user state decodes");
  assert.ok(state.value.body.statusLTimes.has("s1"));
  assert.equal(state.value.body.events.length, 512);

  // UDP ping -> ack with a Vivaldi coordinate payload.
  t.sendPacket(serfAddr, encodePing({ seqNo: 4242, node: "s1", sourceAddr: new Uint8Array([127, 0, 0, 1]), sourcePort: t.port, sourceNode: "t1" }));
  const ack = await waitFor(box, (m) => m.type === "ackResp" && m.body.seqNo === 4242, "UDP ack");
  assert.ok(ack.type === "ackResp" && ack.body.payload, "ack carries a payload");
  assert.ok(decodeCoordinatePayload(ack.body.payload).ok, "coordinate decodes");

  // TCP fallback ping -> stream ack.
  const r = await within(sendStream(t, serfAddr, encodePing({ seqNo: 99, node: "s1" })), "TCP ack");
  assert.ok(r.ok && r.reply, `tcp ping: ${!r.ok ? r.error : "no reply"}`);
  const tcpAck = parseStream(r.reply);
  assert.ok(tcpAck.status === "ok" && tcpAck.message.type === "ackResp" && tcpAck.message.body.seqNo === 99);

  // The agent now gossips to us and probes us: it all decodes.
  await waitFor(box, (m) => m.type === "ping", "a probe from the agent");
  await waitFor(box, (m) => m.type === "alive" && m.body.node === "t1", "our alive gossiped back");
  assert.deepEqual(box.errors, [], "every packet from serf decodes");
  assert.equal(t.stats.packetsGarbage, 0);

  // And the agent lists us as an alive member with our tags.
  const members = await serf(s1Agent, ["members"], { timeoutMs: 5_000 });
  assert.match(members.stdout, new RegExp(`t1\\s+127\\.0\\.0\\.1:${t.port}\\s+alive\\s+role=ts`), members.stdout + members.stderr);
});

test("serf e2e: encrypted join with a serf keygen-style key", { skip }, async () => {
  const keyText = Buffer.from(new Uint8Array(32).map((_, i) => (i * 7 + 3) & 0xff)).toString("base64");
  const key = keyFromBase64(keyText)!;
  const serfAddr = (await startWebSerf("s2", await freePort(), [`-encrypt=${keyText}`])).addr;
  const t = await createNodeTransport({ bindAddr: "127.0.0.1", bindPort: 0, logger: nullLogger(), keyring: new Keyring([key]) });
  transports.push(t);
  const box = listen(t, "t2");
  const remote = await joinPushPull(t, serfAddr, "t2");
  assert.ok(remote.nodes.some((n) => n.name === "s2"));
  t.sendPacket(serfAddr, encodePing({ seqNo: 7, node: "s2", sourceAddr: new Uint8Array([127, 0, 0, 1]), sourcePort: t.port, sourceNode: "t2" }));
  await waitFor(box, (m) => m.type === "ackResp" && m.body.seqNo === 7, "encrypted UDP ack");
  assert.equal(t.stats.packetsDecryptFailed, 0);
  assert.deepEqual(box.errors, []);
});

for (const encrypted of [false, true]) {
test(`serf e2e: a full cairn Serf node (core + driver + codec + transport) joins and sees events${encrypted ? ", encrypted" : ""}`, { skip }, async () => {
  const keyText = Buffer.from(new Uint8Array(16).map((_, i) => 200 - i)).toString("base64");
  const enc = encrypted ? [`-encrypt=${keyText}`] : [];
  const s3 = await startWebSerf("s3", await freePort(), enc);
  const serfAddr = s3.addr;
  const keyring = encrypted ? new Keyring([keyFromBase64(keyText)!]) : undefined;
  const t = await createNodeTransport({ bindAddr: "127.0.0.1", bindPort: 0, logger: nullLogger(), keyring });
  transports.push(t);
  const codec = serfWireCodec();
  const core = new SerfCore({
    name: "c3",
    addr: t.localAddr,
    tags: { role: "cairn" },
    profile: lanProfile,
    rng: new Rng(3),
    logger: nullLogger(),
    now: systemClock.now(),
    measure: codec.measure,
  });
  const events: SerfEvent[] = [];
  const waiters: { pred: (e: SerfEvent) => boolean; resolve: () => void }[] = [];
  const driver = new GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>({
    core,
    clock: systemClock,
    transport: t,
    codec,
    logger: nullLogger(),
    onEvent: (e) => {
      events.push(e);
      for (const w of waiters.splice(0)) (w.pred(e) ? w.resolve() : waiters.push(w));
    },
  });
  const untilEvent = (pred: (e: SerfEvent) => boolean, what: string): Promise<void> =>
    events.some(pred) ? Promise.resolve() : within(new Promise<void>((resolve) => waiters.push({ pred, resolve })), what);
  driver.start();
  try {
    // The agent may still be starting: retry the join until it answers.
    for (let i = 0; ; i++) {
      const seen = events.length;
      driver.input({ kind: "join", addrs: [serfAddr] });
      await untilEvent((e) => e.kind === "joinDone" && events.indexOf(e) >= seen, "joinDone");
      const done = events.slice(seen).find((e) => e.kind === "joinDone");
      if (done?.kind === "joinDone" && done.contacted > 0) break;
      if (i >= 50) assert.fail(`join failed: ${JSON.stringify(done)}\n${serfOutput()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await untilEvent((e) => e.kind === "member" && e.type === "join" && e.members.some((m) => m.name === "s3"), "member s3");
    // The agent lists us alive with our tags.
    await until(async () => /c3\s+127\.0\.0\.1:\d+\s+alive\s+role=cairn/.test((await serf(s3, ["members"], { timeoutMs: 5_000 })).stdout),
      "c3 alive with role=cairn in serf members", { timeoutMs: 10_000, intervalMs: 100 });
    // A user event fired on the agent reaches our node by gossip.
    const ev = await serf(s3, ["event", "deploy", "v9"], { timeoutMs: 5_000 });
    assert.equal(ev.code, 0, ev.stderr);
    await untilEvent((e) => e.kind === "user" && e.name === "deploy", "user event from serf");

    // Another agent joins through us: we serve its push/pull.
    await startWebSerf("s4", await freePort(), [`-join=${t.localAddr}`, ...enc]);
    await untilEvent((e) => e.kind === "member" && e.type === "join" && e.members.some((m) => m.name === "s4"), "member s4 via us");
    assert.ok(t.stats.streamsAccepted >= 1);
    assert.equal(t.stats.packetsGarbage, 0);
    assert.equal(t.stats.streamsGarbage, 0);
    assert.equal(t.stats.packetsDecryptFailed, 0);
  } finally {
    driver.stop();
  }
});
}
