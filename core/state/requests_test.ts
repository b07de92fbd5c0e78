import { test } from "node:test";
import assert from "node:assert/strict";
import { CairnError, CorruptionError, RequestExpiredError } from "../errors.ts";
import { issuerEpoch, parseRequestId, RequestTable } from "./requests.ts";
import type { RequestId } from "./requests.ts";

const a1: RequestId = ["1000-a", 1];

test("requests: a new id, then its repeat answered with the first result", () => {
  const t = new RequestTable();
  assert.deepEqual(t.lookup(a1, 5_000), { kind: "new" });
  t.record(a1, 7, false, 5_000);
  assert.deepEqual(t.lookup(a1, 6_000), { kind: "repeat", index: 7, result: false });
  t.record(["1000-a", 2], 8, new CairnError("state", "Invalid session"), 6_000);
  const r = t.lookup(["1000-a", 2], 6_000);
  assert.equal(r.kind, "repeat");
  const err = (r as { result: unknown }).result;
  assert.ok(err instanceof CairnError && err.code === "state" && err.message === "Invalid session");
  assert.deepEqual(t.lookup(["1000-a", 3], 6_000), { kind: "new" }, "a higher seq of a known issuer is new");
});

test("requests: a dropped record raises its issuer's floor; a repeat below it is refused, never new", () => {
  const t = new RequestTable({ maxEntries: 2 });
  for (let seq = 1; seq <= 4; seq++) t.record(["1000-a", seq], 10 + seq, true, 1_000);
  assert.equal(t.size, 2);
  for (const seq of [1, 2]) {
    const r = t.lookup(["1000-a", seq], 1_000);
    assert.equal(r.kind, "expired", `seq ${seq}`);
    assert.ok((r as { error: unknown }).error instanceof RequestExpiredError);
  }
  assert.equal(t.lookup(["1000-a", 3], 1_000).kind, "repeat");
  // An id below the floor that was never applied is refused too: the table cannot tell.
  const u = new RequestTable({ maxEntries: 1 });
  u.record(["1000-b", 5], 1, true, 0);
  u.record(["1000-b", 6], 2, true, 0);
  assert.equal(u.lookup(["1000-b", 3], 0).kind, "expired");
  assert.equal(u.lookup(["1000-b", 7], 0).kind, "new");
});

test("requests: records go after the retention time, measured by the log's own clock", () => {
  const t = new RequestTable({ retentionMs: 60_000 });
  t.record(a1, 1, true, 100_000);
  t.record(["2000-b", 1], 2, true, 150_000);
  assert.equal(t.lookup(a1, 159_999).kind, "repeat");
  // A stamp from a leader whose clock is behind moves nothing back.
  assert.equal(t.lookup(a1, 10).kind, "repeat");
  assert.equal(t.lookup(a1, 160_001).kind, "expired");
  assert.equal(t.size, 1);
  assert.equal(t.lookup(["2000-b", 1], 160_001).kind, "repeat");
});

test("requests: idle empty issuers are dropped; an unknown issuer at or below their epoch is refused with the epoch to mint above", () => {
  const t = new RequestTable({ retentionMs: 1_000, issuerIdleMs: 10_000 });
  t.record(["5000-old", 1], 1, true, 0);
  t.record(["9000-new", 1], 2, true, 20_000);
  assert.equal(t.issuerCount, 1, "the idle issuer with no records left is gone");
  assert.equal(t.minEpoch, 5000);
  const r = t.lookup(["5000-old", 1], 20_000);
  assert.equal(r.kind, "expired");
  assert.equal((r as { error: RequestExpiredError }).error.minEpoch, 5000);
  assert.equal(t.lookup(["4000-x", 1], 20_000).kind, "expired", "an older epoch is refused");
  assert.equal(t.lookup(["5001-x", 1], 20_000).kind, "new");
  assert.equal(t.lookup(["9000-new", 2], 20_000).kind, "new", "a known issuer is unaffected");
});

test("requests: an issuer that still holds records is never dropped", () => {
  const t = new RequestTable({ retentionMs: 1_000_000, issuerIdleMs: 1, maxIssuers: 1 });
  t.record(["10-a", 1], 1, true, 0);
  t.record(["20-b", 1], 2, true, 5_000);
  assert.equal(t.issuerCount, 2);
  assert.equal(t.lookup(["10-a", 1], 5_000).kind, "repeat");
});

test("requests: snapshot rows rebuild the same table; malformed rows are refused", () => {
  const t = new RequestTable({ maxEntries: 3, retentionMs: 60_000 });
  for (let seq = 1; seq <= 5; seq++) t.record(["1000-a", seq], seq, seq % 2 === 0 ? { results: [seq] } : new CairnError("state", `e${seq}`), seq * 1_000);
  t.record(["2000-b", 1], 6, "session-id", 6_000);
  const back = RequestTable.fromRows(structuredClone(t.rows()), { maxEntries: 3, retentionMs: 60_000 });
  assert.deepEqual(back.rows(), t.rows());
  for (let seq = 1; seq <= 6; seq++) {
    for (const id of [["1000-a", seq], ["2000-b", seq]] as RequestId[]) {
      const x = t.lookup(id, 7_000);
      const y = back.lookup(id, 7_000);
      assert.equal(y.kind, x.kind, `${id}`);
    }
  }
  assert.throws(() => RequestTable.fromRows([{ k: "entry", issuer: "nobody", seq: 1, index: 1, atMs: 0, r: { v: 1 } }]), CorruptionError);
  assert.throws(() => RequestTable.fromRows([{ k: "meta", minEpoch: "x", nowMs: 0 }]), CorruptionError);
  assert.throws(() => RequestTable.fromRows([{ k: "what" }]), CorruptionError);
  assert.throws(() => RequestTable.fromRows([null]), CorruptionError);
});

test("requests: ids and issuer epochs from peer input", () => {
  assert.deepEqual(parseRequestId(["1-a", 3]), ["1-a", 3]);
  for (const bad of [undefined, [], ["a"], ["", 1], ["a", 0], ["a", 1.5], ["a", "1"], [1, 1], ["x".repeat(200), 1], ["a", 1, 2]]) {
    assert.equal(typeof parseRequestId(bad), "string", JSON.stringify(bad));
  }
  assert.equal(issuerEpoch("1700000000000-abc"), 1700000000000);
  assert.equal(issuerEpoch("abc"), 0);
  assert.equal(issuerEpoch("-abc"), 0);
  assert.equal(issuerEpoch("12"), 12);
});
