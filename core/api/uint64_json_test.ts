import assert from "node:assert/strict";
import { test } from "node:test";
import { parseJsonExact, stringifyExact, toUint64 } from "./uint64_json.ts";

test("uint64 json: flags above 2^53 survive a parse and a stringify digit for digit", () => {
  const text = '[{"Key":"tf/lock","Flags":3304740253564472344,"Value":null},{"Key":"a","Flags":42}]';
  const data = parseJsonExact(text, ["Flags"]) as { Flags: unknown }[];
  assert.equal(toUint64(data[0]!.Flags), 3304740253564472344n);
  assert.equal(toUint64(data[1]!.Flags), 42);
  assert.equal(stringifyExact([{ key: "tf/lock", flags: 3304740253564472344n }, { key: "a", flags: 42 }]), '[{"key":"tf/lock","flags":3304740253564472344},{"key":"a","flags":42}]');
  assert.equal(stringifyExact({ flags: 18446744073709551615n }, "\t"), '{\n\t"flags": 18446744073709551615\n}');
});

test("uint64 json: a field name inside a string is left alone; other long numbers are parsed as usual", () => {
  const data = parseJsonExact('{"Key":"x\\"Flags\\":12345678901234567890","Other":12345678901234567890}', ["Flags"]) as Record<string, unknown>;
  assert.equal(data.Key, 'x"Flags":12345678901234567890');
  assert.equal(typeof data.Other, "number");
});

test("uint64: the range is 0 to 2^64 - 1; a safe value stays a number", () => {
  assert.equal(toUint64("18446744073709551615"), 18446744073709551615n);
  assert.equal(toUint64("18446744073709551616"), undefined);
  assert.equal(toUint64(-1), undefined);
  assert.equal(toUint64(1.5), undefined);
  assert.equal(toUint64("9007199254740991"), 9007199254740991);
  assert.equal(toUint64(2n ** 53n), 9007199254740992n);
  assert.equal(toUint64("x"), undefined);
});
