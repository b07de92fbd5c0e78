import { test } from "node:test";
import assert from "node:assert/strict";
import { byteKey } from "./byte_key.ts";

test("byteKey: one char per byte, for every byte value, from a view into a larger buffer", () => {
  const buf = new Uint8Array(300);
  for (let i = 0; i < buf.length; i++) buf[i] = i & 0xff;
  const key = byteKey(buf.subarray(10, 266));
  assert.equal(key.length, 256);
  for (let i = 0; i < 256; i++) assert.equal(key.charCodeAt(i), (i + 10) & 0xff);
  assert.equal(byteKey(new Uint8Array(0)), "");
  assert.notEqual(byteKey(Uint8Array.of(1, 2)), byteKey(Uint8Array.of(1, 2, 0)));
});
