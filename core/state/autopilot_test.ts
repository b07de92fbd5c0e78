import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeCommand, Fsm, MessageType } from "../server/fsm.ts";
import { autopilotConfigGet } from "./autopilot.ts";
import type { AutopilotSettings } from "./autopilot.ts";

const settings: AutopilotSettings = { cleanupDeadServers: true, lastContactThresholdMs: 200, maxTrailingLogs: 250, minQuorum: 0, serverStabilizationTimeMs: 10_000 };

test("autopilot config: set, CAS on modifyIndex, carried by a snapshot", async () => {
  const fsm = new Fsm();
  assert.equal(autopilotConfigGet(fsm.state), undefined);
  // cas 0: only when nothing is stored yet (how a leader stores the agent's autopilot {} once).
  assert.equal(fsm.apply(3, encodeCommand(MessageType.Autopilot, { config: settings, cas: 0 })), true);
  assert.equal(fsm.apply(4, encodeCommand(MessageType.Autopilot, { config: { ...settings, minQuorum: 9 }, cas: 0 })), false);
  assert.deepEqual(autopilotConfigGet(fsm.state), { ...settings, createIndex: 3, modifyIndex: 3 });
  assert.equal(fsm.apply(5, encodeCommand(MessageType.Autopilot, { config: { ...settings, minQuorum: 3 }, cas: 2 })), false);
  assert.equal(fsm.apply(6, encodeCommand(MessageType.Autopilot, { config: { ...settings, minQuorum: 3 }, cas: 3 })), true);
  assert.equal(fsm.apply(7, encodeCommand(MessageType.Autopilot, { config: { ...settings, cleanupDeadServers: false } })), true);
  assert.deepEqual(autopilotConfigGet(fsm.state), { ...settings, cleanupDeadServers: false, createIndex: 3, modifyIndex: 7 });
  assert.equal(fsm.state.maxIndex("autopilot"), 7);
  assert.match(String(fsm.apply(8, encodeCommand(MessageType.Autopilot, { config: { ...settings, maxTrailingLogs: -1 } }))), /malformed/);
  const other = new Fsm();
  await other.restore(fsm.snapshot());
  assert.deepEqual(autopilotConfigGet(other.state), autopilotConfigGet(fsm.state));
});
