import assert from "node:assert/strict";
import { test } from "node:test";
import type { AutopilotSettings } from "../../state/autopilot.ts";
import { autopilotAction, failureTolerance, HealthTracker, isServerHealthy } from "./autopilot_decide.ts";
import type { AutopilotServerView, AutopilotView } from "./autopilot_decide.ts";

const settings: AutopilotSettings = { cleanupDeadServers: true, lastContactThresholdMs: 200, maxTrailingLogs: 250, minQuorum: 0, serverStabilizationTimeMs: 10_000 };

function srv(id: string, more: Partial<AutopilotServerView> = {}): AutopilotServerView {
  return { id, name: `n${id}`, address: `10.0.0.${id}:8300`, version: "", voter: true, leader: id === "1", serfStatus: "alive", lastContactMs: id === "1" ? 0 : 50, lastTerm: 3, lastIndex: 1000, ...more };
}

function view(...servers: AutopilotServerView[]): AutopilotView {
  return { leaderTerm: 3, leaderLastIndex: 1000, servers };
}

test("autopilot health: the rule, table-style", () => {
  const v = view();
  const cases: Array<[string, Partial<AutopilotServerView>, boolean]> = [
    ["in step", {}, true],
    ["gossip says failed", { serfStatus: "failed" }, false],
    ["gossip does not know it", { serfStatus: "none" }, false],
    ["never heard from", { lastContactMs: undefined }, false],
    ["at the contact threshold", { lastContactMs: 200 }, true],
    ["past the contact threshold", { lastContactMs: 201 }, false],
    ["last entry of an older term", { lastTerm: 2 }, false],
    ["trails by max_trailing_logs", { lastIndex: 750 }, true],
    ["trails by more", { lastIndex: 749 }, false],
  ];
  for (const [name, more, want] of cases) assert.equal(isServerHealthy(srv("2", more), v, settings), want, name);
  // A young log: trailing is not judged until the leader holds more than max_trailing_logs entries.
  assert.equal(isServerHealthy(srv("2", { lastIndex: 0 }), { leaderTerm: 3, leaderLastIndex: 100 }, settings), true);
});

test("autopilot health: failure tolerance counts healthy voters over the quorum", () => {
  const h = (voter: boolean, healthy: boolean) => ({ voter, healthy });
  assert.equal(failureTolerance([h(true, true)]), 0);
  assert.equal(failureTolerance([h(true, true), h(true, true), h(true, true)]), 1);
  assert.equal(failureTolerance([h(true, true), h(true, true), h(true, false)]), 0);
  assert.equal(failureTolerance([h(true, true), h(true, true), h(true, true), h(false, true)]), 1);
  assert.equal(failureTolerance([h(true, true), h(true, true), h(true, true), h(true, true), h(true, true)]), 2);
  assert.equal(failureTolerance([h(true, false), h(true, false), h(true, true)]), 0);
});

test("autopilot: a non-voter is promoted once healthy for server_stabilization_time", () => {
  const t = new HealthTracker();
  const joiner = (more: Partial<AutopilotServerView> = {}) => srv("4", { voter: false, ...more });
  let r = t.observe(view(srv("1"), srv("2"), srv("3"), joiner()), settings, 1_000);
  assert.equal(r.servers[3]!.stableSinceMs, 1_000);
  assert.equal(autopilotAction(r, settings, 1_000), undefined);
  // Unhealthy for a moment: stability starts again.
  r = t.observe(view(srv("1"), srv("2"), srv("3"), joiner({ lastContactMs: 900 })), settings, 6_000);
  r = t.observe(view(srv("1"), srv("2"), srv("3"), joiner()), settings, 7_000);
  assert.equal(r.servers[3]!.stableSinceMs, 7_000);
  assert.equal(autopilotAction(t.observe(view(srv("1"), srv("2"), srv("3"), joiner()), settings, 16_999), settings, 16_999), undefined);
  assert.deepEqual(autopilotAction(t.observe(view(srv("1"), srv("2"), srv("3"), joiner()), settings, 17_000), settings, 17_000), {
    op: "promote",
    id: "4",
    address: "10.0.0.4:8300",
    name: "n4",
  });
});

test("autopilot: dead server cleanup respects cleanup_dead_servers, the threshold, min_quorum and quorum", () => {
  const dead = (id: string, more: Partial<AutopilotServerView> = {}) => srv(id, { serfStatus: "failed", lastContactMs: 5_000, ...more });
  const decide = (servers: AutopilotServerView[], s: AutopilotSettings = settings) => autopilotAction(new HealthTracker().observe(view(...servers), s, 0), s, 0);
  assert.deepEqual(decide([srv("1"), srv("2"), srv("3"), dead("4")]), { op: "removeServer", id: "4", name: "n4", reason: "voter is failed" });
  assert.equal(decide([srv("1"), srv("2"), srv("3"), dead("4")], { ...settings, cleanupDeadServers: false }), undefined);
  // Still heard from within last_contact_threshold: not yet.
  assert.equal(decide([srv("1"), srv("2"), srv("3"), dead("4", { lastContactMs: 100 })]), undefined);
  // Unknown to gossip (a restart before gossip met everyone): left alone.
  assert.equal(decide([srv("1"), srv("2"), srv("3"), dead("4", { serfStatus: "none" })]), undefined);
  // min_quorum: no voter removal below it.
  assert.equal(decide([srv("1"), srv("2"), srv("3"), dead("4")], { ...settings, minQuorum: 4 }), undefined);
  assert.deepEqual(decide([srv("1"), srv("2"), srv("3"), dead("4")], { ...settings, minQuorum: 3 })?.op, "removeServer");
  // A dead non-voter goes even at min_quorum.
  assert.deepEqual(decide([srv("1"), srv("2"), srv("3"), dead("4", { voter: false })], { ...settings, minQuorum: 3 })?.id, "4");
  // Never into a lost quorum: 5 voters, 3 dead → 2 healthy of the 4 left is no quorum.
  assert.equal(decide([srv("1"), srv("2"), dead("3"), dead("4"), dead("5")]), undefined);
  // 5 voters, 2 dead → 3 healthy of 4 left: remove one; then 3 healthy of 2 left… one at a time.
  assert.equal(decide([srv("1"), srv("2"), srv("3"), dead("4"), dead("5")])?.id, "4");
  assert.equal(decide([srv("1"), srv("2"), srv("3"), dead("5")])?.id, "5");
  // Two voters: removing one of them is never safe (raft-autopilot's (voters - 1) / 2 is 0).
  assert.equal(decide([srv("1"), dead("2")]), undefined);
  assert.equal(decide([srv("1"), srv("2"), dead("3")])?.id, "3");
  // Never the leader itself.
  assert.equal(decide([srv("1", { serfStatus: "failed" }), srv("2"), srv("3")]), undefined);
});
