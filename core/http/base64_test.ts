import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeBase64, encodeBase64 } from "./base64.ts";

test("base64: matches the reference encoder for every length up to 70", () => {
  for (let n = 0; n <= 70; n++) {
    const bytes = new Uint8Array(n).map((_, i) => (i * 37 + n) & 0xff);
    const want = Buffer.from(bytes).toString("base64");
    assert.equal(encodeBase64(bytes), want, `length ${n}`);
    assert.deepEqual(decodeBase64(want), bytes, `length ${n}`);
  }
});

test("base64: all 256 byte values round-trip", () => {
  const bytes = new Uint8Array(256).map((_, i) => i);
  assert.deepEqual(decodeBase64(encodeBase64(bytes)), bytes);
});

test("base64: decode tolerates missing padding and newlines, rejects junk", () => {
  assert.deepEqual(decodeBase64("aGk"), new TextEncoder().encode("hi"));
  assert.deepEqual(decodeBase64("aGk=\n"), new TextEncoder().encode("hi"));
  assert.deepEqual(decodeBase64(""), new Uint8Array(0));
  assert.equal(decodeBase64("a"), undefined);
  assert.equal(decodeBase64("aGk*"), undefined);
  assert.equal(decodeBase64("aG=k"), undefined);
  assert.equal(decodeBase64("aGk=="), undefined);
  assert.equal(decodeBase64("é"), undefined);
});
