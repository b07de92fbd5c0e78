import assert from "node:assert/strict";
import { test } from "node:test";
import { randomBytes, randomSeed, randomUUID } from "./random_node.ts";

test("randomUUID: version 4, RFC 4122 variant, lower-case, different each time", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const id = randomUUID();
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    seen.add(id);
  }
  assert.equal(seen.size, 200);
});

test("randomBytes and randomSeed: the asked length, unsigned 32-bit seeds", () => {
  assert.equal(randomBytes(0).length, 0);
  assert.equal(randomBytes(1000).length, 1000);
  // 1000 random bytes all zero would mean nothing was read.
  assert.ok(randomBytes(1000).some((b) => b !== 0));
  const seeds = Array.from({ length: 50 }, () => randomSeed());
  for (const s of seeds) assert.ok(Number.isInteger(s) && s >= 0 && s <= 0xffffffff);
  assert.ok(new Set(seeds).size > 45);
});
