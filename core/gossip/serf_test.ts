import { test } from "node:test";
import assert from "node:assert/strict";
import { nullLogger } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { lanProfile, serfAgentTimings, serfTimings } from "./profiles.ts";
import { LamportClock, SerfCore } from "./serf.ts";
import type { SerfEvent, SerfMsg } from "./serf.ts";

function serf(name = "a", timings = serfTimings): SerfCore {
  return new SerfCore({ name, addr: "10.0.0.1:7946", profile: lanProfile, timings, rng: new Rng(1), logger: nullLogger(), now: 0 });
}

function deliver(s: SerfCore, now: number, msg: SerfMsg): SerfEvent[] {
  s.step({ kind: "packet", now, from: "10.0.0.9:7946", msg: { type: "user", msg } });
  return s.ready().events;
}

const bytes = (t: string) => new TextEncoder().encode(t);

test("LamportClock: witness moves past the value only when it is not behind", () => {
  const c = new LamportClock();
  assert.equal(c.time, 0);
  assert.equal(c.increment(), 1);
  c.witness(0);
  assert.equal(c.time, 1);
  c.witness(1);
  assert.equal(c.time, 2);
  c.witness(41);
  assert.equal(c.time, 42);
  c.witness(10);
  assert.equal(c.time, 42);
});

test("serf: clocks start at 1 and the local node is an alive member", () => {
  const s = serf();
  assert.equal(s.clock.time, 1);
  assert.equal(s.eventClock.time, 1);
  assert.equal(s.queryClock.time, 1);
  assert.equal(s.memberStatus("a"), "alive");
  const evs = s.ready().events;
  assert.deepEqual(evs.map((e) => e.kind === "member" && e.type), ["join"]);
});

test("serf: user events are deduplicated by (LTime, name, payload) and witnessed", () => {
  const s = serf();
  s.ready();
  const ev = { type: "userEvent", body: { lTime: 10, name: "deploy", payload: bytes("v1"), cc: false } } as const;
  assert.equal(deliver(s, 1, ev).filter((e) => e.kind === "user").length, 1);
  assert.equal(deliver(s, 2, ev).filter((e) => e.kind === "user").length, 0, "duplicate");
  assert.equal(s.eventClock.time, 11);
  const other = { type: "userEvent", body: { lTime: 10, name: "deploy", payload: bytes("v2"), cc: false } } as const;
  assert.equal(deliver(s, 3, other).filter((e) => e.kind === "user").length, 1, "same LTime, other payload");
  // Far beyond the 512-slot window, an old event is dropped.
  deliver(s, 4, { type: "userEvent", body: { lTime: 2000, name: "x", payload: bytes(""), cc: false } });
  assert.equal(deliver(s, 5, { type: "userEvent", body: { lTime: 100, name: "old", payload: bytes(""), cc: false } }).length, 0);
});

test("serf: coalesced user events deliver only the newest per name after the quiet period", () => {
  const s = serf("a", serfAgentTimings);
  s.ready();
  for (const [t, v] of [[10, "v1"], [11, "v2"], [12, "v3"]] as const) {
    assert.equal(deliver(s, t * 10, { type: "userEvent", body: { lTime: t, name: "deploy", payload: bytes(v), cc: true } }).length, 0);
  }
  s.step({ kind: "tick", now: 120 + 999 });
  assert.equal(s.ready().events.filter((e) => e.kind === "user").length, 0, "still quiet period");
  s.step({ kind: "tick", now: 120 + 1000 });
  const out = s.ready().events.flatMap((e) => (e.kind === "user" ? [new TextDecoder().decode(e.payload)] : []));
  assert.deepEqual(out, ["v3"]);
});

test("serf: user event size limit is an error event, not a throw", () => {
  const s = serf();
  s.ready();
  s.step({ kind: "userEvent", now: 1, name: "big", payload: new Uint8Array(600), coalesce: false });
  const evs = s.ready().events;
  assert.equal(evs.length, 1);
  assert.equal(evs[0]!.kind, "error");
});

test("serf: queries honour node and tag filters; bad regexps don't match", () => {
  const s = new SerfCore({ name: "a", addr: "10.0.0.1:7946", tags: { role: "web" }, profile: lanProfile, rng: new Rng(1), logger: nullLogger(), now: 0 });
  s.ready();
  let lTime = 5;
  const q = (filters: import("./wire/messages.ts").QueryFilter[]) => {
    const body = { lTime: lTime++, id: 7, addr: "10.0.0.2:7946", sourceNode: "b", filters, flags: 1, relayFactor: 0, timeoutMs: 1000, name: "q", payload: null };
    const evs = deliver(s, 1, { type: "query", body });
    const sends = s.ready().sends;
    return { delivered: evs.some((e) => e.kind === "query"), sends };
  };
  assert.equal(q([]).delivered, true);
  assert.equal(q([{ type: "node", nodes: ["a", "c"] }]).delivered, true);
  assert.equal(q([{ type: "node", nodes: ["c"] }]).delivered, false);
  assert.equal(q([{ type: "tag", filter: { tag: "role", expr: "^w" } }]).delivered, true);
  assert.equal(q([{ type: "tag", filter: { tag: "role", expr: "db" } }]).delivered, false);
  assert.equal(q([{ type: "tag", filter: { tag: "role", expr: "(" } }]).delivered, false);
  assert.equal(q([{ type: "tag", filter: { tag: "dc", expr: "^$" } }]).delivered, true, "missing tag is the empty string");
});

test("serf: a query's ack goes to the querier's address; a response is sent once", () => {
  const s = serf();
  s.ready();
  const body = { lTime: 3, id: 9, addr: "10.0.0.2:7946", sourceNode: "b", filters: [], flags: 1, relayFactor: 0, timeoutMs: 1000, name: "q", payload: null };
  s.step({ kind: "packet", now: 10, from: "10.0.0.2:7946", msg: { type: "user", msg: { type: "query", body } } });
  const rd = s.ready();
  const ack = rd.sends.find((x) => x.msg.type === "user" && x.msg.msg.type === "queryResponse");
  assert.ok(ack && ack.to === "10.0.0.2:7946");
  s.step({ kind: "respond", now: 20, lTime: 3, id: 9, payload: bytes("hi") });
  assert.equal(s.ready().sends.length, 1);
  s.step({ kind: "respond", now: 30, lTime: 3, id: 9, payload: bytes("again") });
  const again = s.ready();
  assert.equal(again.sends.length, 0);
  assert.equal(again.events[0]?.kind, "error");
  s.step({ kind: "respond", now: 2000, lTime: 3, id: 9, payload: bytes("late") });
  assert.equal(s.ready().sends.length, 0, "past the deadline");
});

test("serf: a leave intent about ourselves while alive is refuted with a join intent", () => {
  const s = serf();
  s.ready();
  const evs = deliver(s, 1, { type: "leave", body: { lTime: 5, node: "a", prune: false } });
  assert.equal(evs.length, 0);
  assert.equal(s.memberStatus("a"), "alive");
  assert.ok(s.clock.time > 5);
  // The refuting join intent goes out with the next gossip/piggyback.
  s.step({ kind: "join", now: 2, addrs: ["10.0.0.2:7946"] });
  const pp = s.ready().sends[0];
  assert.ok(pp && pp.msg.type === "pushPull");
});

test("serf: intents for unknown members are kept and applied when the member joins", () => {
  const s = serf();
  s.ready();
  deliver(s, 1, { type: "leave", body: { lTime: 7, node: "b", prune: false } });
  s.step({ kind: "packet", now: 2, from: "10.0.0.2:7946", msg: { type: "alive", node: "b", addr: "10.0.0.2:7946", incarnation: 1, meta: {}, vsn: [1, 5, 2, 2, 5, 5] } });
  s.ready();
  assert.equal(s.memberStatus("b"), "leaving");
  assert.equal(s.member("b")?.statusLTime, 7);
});

test("serf: vetoMember rejects alive messages and join push/pulls from another datacenter", () => {
  const veto = (m: { tags: Readonly<Record<string, string>> }) => (m.tags.dc === "dc1" ? undefined : `Member is in "${m.tags.dc}"`);
  const mk = (name: string, addr: string, dc: string) =>
    new SerfCore({ name, addr, tags: { dc }, profile: lanProfile, rng: new Rng(2), logger: nullLogger(), now: 0, vetoMember: veto });
  const a = mk("a", "10.0.0.1:7946", "dc1");
  a.ready();
  a.step({ kind: "packet", now: 1, from: "10.0.0.3:7946", msg: { type: "alive", node: "c", addr: "10.0.0.3:7946", incarnation: 1, meta: { dc: "dc2" }, vsn: [1, 5, 2, 2, 5, 5] } });
  assert.equal(a.member("c"), undefined);
  a.step({ kind: "packet", now: 1, from: "10.0.0.4:7946", msg: { type: "alive", node: "d", addr: "10.0.0.4:7946", incarnation: 1, meta: { dc: "dc1" }, vsn: [1, 5, 2, 2, 5, 5] } });
  assert.equal(a.memberStatus("d"), "alive");
  const b = mk("b", "10.0.0.2:7946", "dc2");
  b.ready();
  a.ready();
  b.step({ kind: "join", now: 2, addrs: [a.swim.addr] });
  const req = b.ready().sends[0]!;
  a.step({ kind: "stream", now: 3, from: b.swim.addr, msg: req.msg, streamId: 5 });
  assert.equal(a.member("b"), undefined);
});

test("serf: tags over the 512-byte meta limit are refused with an error event", () => {
  const s = serf();
  s.ready();
  s.step({ kind: "setTags", now: 1, tags: { big: "x".repeat(600) } });
  const evs = s.ready().events;
  assert.equal(evs.length, 1);
  assert.equal(evs[0]!.kind, "error");
  assert.deepEqual(s.tags, {});
  s.step({ kind: "setTags", now: 2, tags: { role: "web" } });
  assert.deepEqual(s.tags, { role: "web" });
  assert.ok(s.ready().events.some((e) => e.kind === "member" && e.type === "update"));
  assert.equal(s.swim.incarnation, 2, "a metadata update bumps the incarnation");
});

test("serf: restored clocks are witnessed and older events are not delivered again", () => {
  const s = new SerfCore({
    name: "a", addr: "10.0.0.1:7946", profile: lanProfile, rng: new Rng(1), logger: nullLogger(), now: 0,
    restoreClocks: { lTime: 40, eventLTime: 30, queryLTime: 20 },
  });
  s.ready();
  assert.deepEqual(s.clocks(), { lTime: 41, eventLTime: 31, queryLTime: 21 });
  const old = deliver(s, 1, { type: "userEvent", body: { lTime: 30, name: "deploy", payload: bytes("v1"), cc: false } });
  assert.equal(old.filter((e) => e.kind === "user").length, 0);
  const fresh = deliver(s, 2, { type: "userEvent", body: { lTime: 31, name: "deploy", payload: bytes("v2"), cc: false } });
  assert.equal(fresh.filter((e) => e.kind === "user").length, 1);
  const q = { lTime: 20, id: 1, addr: "10.0.0.2:7946", sourceNode: "b", filters: [], flags: 0, relayFactor: 0, timeoutMs: 1000, name: "q", payload: null };
  assert.equal(deliver(s, 3, { type: "query", body: q }).filter((e) => e.kind === "query").length, 0);
  assert.equal(deliver(s, 4, { type: "query", body: { ...q, lTime: 21 } }).filter((e) => e.kind === "query").length, 1);
});

test("serf: a join is followed by one more push/pull with the join target, one repair interval later", () => {
  const vsn = [1, 5, 2, 2, 5, 5];
  const target = "10.0.0.2:7946";
  /** a joins b; `learnAtMs` (if set): an alive for c arrives by gossip then. Returns when a push/pulled b again. */
  const run = (join: boolean, learnAtMs?: number): number[] => {
    const b = new SerfCore({ name: "b", addr: target, profile: lanProfile, timings: serfTimings, rng: new Rng(3), logger: nullLogger(), now: 0 });
    const a = serf();
    a.ready();
    b.ready();
    if (join) {
      a.step({ kind: "join", now: 10, addrs: [target] });
      const req = a.ready().sends.find((x) => x.msg.type === "pushPull")!;
      b.step({ kind: "stream", now: 11, from: a.swim.addr, msg: req.msg, streamId: 1 });
      const reply = b.ready().sends.find((x) => x.replyTo === 1)!;
      a.step({ kind: "stream", now: 12, from: target, msg: reply.msg, requestId: req.requestId });
      assert.equal(a.memberStatus("b"), "alive");
      assert.ok(a.ready().events.some((e) => e.kind === "joinDone"));
    }
    const pulls: number[] = [];
    for (let now = 20; now <= 6_000; now += 20) {
      if (learnAtMs !== undefined && now === learnAtMs) {
        a.step({ kind: "packet", now, from: "10.0.0.3:7946", msg: { type: "alive", node: "c", addr: "10.0.0.3:7946", incarnation: 1, meta: {}, vsn } });
      }
      a.step({ kind: "tick", now });
      for (const x of a.ready().sends) {
        if (x.to === target && x.msg.type === "pushPull" && !x.msg.join && x.requestId !== undefined) {
          pulls.push(now);
          a.step({ kind: "streamError", now, requestId: x.requestId, error: "not answered in this test" });
        }
      }
    }
    return pulls;
  };
  const none = run(false);
  // Periodic push/pulls (30 s, random phase) are the same in every run: compare against a run without the join.
  const extra = (xs: number[]) => xs.filter((t) => !none.includes(t));
  // One repair interval (200 ms scaled, 2 members) after the join, once, whether or not gossip
  // brought members meanwhile: the last joiners of a burst hear of the ones after them from the
  // target sooner than by gossip.
  assert.deepEqual(extra(run(true)), [220]);
  assert.deepEqual(extra(run(true, 100)), [220]);
  assert.deepEqual(extra(run(true, 3_000)), [220]);
});
