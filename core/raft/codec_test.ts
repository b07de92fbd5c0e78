import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng } from "../sim/rng.ts";
import {
  decodeConfiguration,
  decodeHardState,
  decodeLogEntry,
  decodeRaftMessage,
  encodeConfiguration,
  encodeHardState,
  encodeLogEntry,
  encodeRaftMessage,
} from "./codec.ts";
import type { RaftMessage } from "./types.ts";

const samples: RaftMessage[] = [
  { type: "vote", from: "a", to: "b", term: 3, pre: true, lastIndex: 9, lastTerm: 2, transfer: false },
  { type: "voteResp", from: "b", to: "a", term: 3, pre: false, granted: true },
  {
    type: "append", from: "a", to: "b", term: 3, prevIndex: 4, prevTerm: 2, commit: 4, fromAddress: "10.0.0.1:8300",
    entries: [{ index: 5, term: 3, type: "normal", data: new Uint8Array([1, 2]) }, { index: 6, term: 3, type: "noop", data: new Uint8Array() }],
  },
  { type: "appendResp", from: "b", to: "a", term: 3, index: 4, reject: true, rejectHint: 3, hintTerm: 2 },
  { type: "heartbeat", from: "a", to: "b", term: 3, commit: 9, ctx: 12 },
  { type: "heartbeatResp", from: "b", to: "a", term: 3, ctx: 12 },
  {
    type: "snapshot", from: "a", to: "b", term: 3, offset: 0, chunk: new Uint8Array([7]), done: true,
    meta: { index: 9, term: 2, sizeBytes: 1, configuration: { servers: [{ id: "a", address: "x", suffrage: "voter" }] } },
  },
  { type: "snapshotResp", from: "b", to: "a", term: 3, index: 9, offset: 1, reject: false },
  { type: "timeoutNow", from: "a", to: "b", term: 3 },
];

test("codec: every message type round-trips", () => {
  for (const m of samples) assert.deepEqual(decodeRaftMessage(encodeRaftMessage(m)), m, m.type);
});

test("codec: malformed and random bytes decode to undefined, never throw", () => {
  const rng = new Rng(7);
  for (let i = 0; i < 2_000; i++) {
    const bytes = rng.bytes(rng.int(64));
    assert.doesNotThrow(() => decodeRaftMessage(bytes));
  }
  // Well-formed msgpack, wrong shapes.
  const bad: unknown[] = [
    { ...samples[0], term: -1 },
    { ...samples[0], type: "nope" },
    { ...samples[2], entries: [{ index: 9, term: 3, type: "normal", data: new Uint8Array() }] }, // not contiguous with prevIndex
    { ...samples[2], fromAddress: 5 },
    { ...samples[6], meta: { index: 1 } },
    [1, 2, 3],
    "x",
  ];
  for (const b of bad) assert.equal(decodeRaftMessage(encodeRaftMessage(b as RaftMessage)), undefined, JSON.stringify(b));
  // Bit flips of valid messages never throw.
  for (const m of samples) {
    const enc = encodeRaftMessage(m);
    for (let i = 0; i < enc.length; i++) {
      const c = enc.slice();
      c[i] = c[i]! ^ 0xff;
      assert.doesNotThrow(() => decodeRaftMessage(c));
    }
  }
});

test("codec: storage values round-trip", () => {
  const cfg = { servers: [{ id: "a", address: "1", suffrage: "voter" as const }, { id: "b", address: "2", suffrage: "nonvoter" as const }] };
  assert.deepEqual(decodeConfiguration(encodeConfiguration(cfg)), cfg);
  const e = { index: 3, term: 2, type: "config" as const, data: encodeConfiguration(cfg) };
  assert.deepEqual(decodeLogEntry(encodeLogEntry(e)), e);
  assert.deepEqual(decodeHardState(encodeHardState({ term: 4, vote: "a", commit: 9 })), { term: 4, vote: "a", commit: 9 });
  assert.equal(decodeHardState(new Uint8Array([0xc1])), undefined);
});
