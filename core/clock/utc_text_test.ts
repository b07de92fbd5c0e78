import assert from "node:assert/strict";
import { test } from "node:test";
import { httpDate, isoTimestamp } from "./utc_text.ts";
import { Rng } from "../sim/mod.ts";

test("isoTimestamp and httpDate: the same text as Date's own formatters", () => {
  const fixed = [0, 1, 999, 1_000, 784_111_777_000, 951_782_400_000 /* 2000-02-29 */, 1_795_000_000_123, 253_402_300_799_999 /* 9999-12-31 */, -1, -62_167_219_200_000 /* year 0 */, -62_167_219_200_001, 253_402_300_800_000, 8.64e15, -8.64e15];
  const rng = new Rng(20261121);
  const random = Array.from({ length: 2_000 }, () => Math.floor((rng.float() * 2 - 1) * 4e12));
  for (const ms of [...fixed, ...random]) {
    assert.equal(isoTimestamp(ms), new Date(ms).toISOString(), `isoTimestamp(${ms})`);
    assert.equal(httpDate(ms), new Date(ms).toUTCString(), `httpDate(${ms})`);
  }
});

test("isoTimestamp: an invalid time throws as toISOString does", () => {
  assert.throws(() => isoTimestamp(Number.NaN), RangeError);
});
