import assert from "node:assert/strict";
import { test } from "node:test";
import { TombstoneGc } from "./tombstone_gc.ts";

test("tombstone gc: hints expire after the TTL, bucketed by granularity", () => {
  const gc = new TombstoneGc({ ttlMs: 60_000, granularityMs: 10_000 });
  gc.hint(5, 1_000);
  gc.hint(9, 8_000); // same bucket (expires at 70,000)
  gc.hint(12, 12_000); // next bucket (80,000)
  gc.hint(0, 12_000); // ignored
  assert.equal(gc.pendingBuckets, 2);
  assert.equal(gc.nextExpiryMs(), 70_000);
  assert.equal(gc.expire(69_999), 0);
  assert.equal(gc.expire(70_000), 9);
  assert.equal(gc.expire(75_000), 0);
  assert.equal(gc.expire(200_000), 12);
  assert.equal(gc.pendingBuckets, 0);
  gc.hint(3, 0);
  gc.reset();
  assert.equal(gc.expire(1e9), 0);
});
