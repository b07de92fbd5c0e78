import { test } from "node:test";
import assert from "node:assert/strict";
import { findJsonSyntaxError } from "./json_error.ts";

test("json error locator: valid JSON has no problem", () => {
  for (const t of ['{}', '[]', '{"a": [1, -2.5e3, true, false, null, "x\\n\\u00e9"]}', ' "s" ', '0']) {
    assert.equal(findJsonSyntaxError(t), undefined, t);
    JSON.parse(t);
  }
});

test("json error locator: finds the offset of the first problem", () => {
  const cases: Array<[string, number, RegExp]> = [
    ['{\n  "ports": { "http": }\n}', 23, /expected a value/],
    ['{"a": 1,}', 8, /quoted key/],
    ['{"a" 1}', 5, /expected ":"/],
    ['[1 2]', 3, /"," or "]"/],
    ['{"a": "x', 8, /unterminated/],
    ['{} x', 3, /after the end/],
    ['', 0, /end of input/],
  ];
  for (const [text, offset, reason] of cases) {
    const p = findJsonSyntaxError(text);
    assert.ok(p, text);
    assert.equal(p.offset, offset, text);
    assert.match(p.reason, reason);
    assert.throws(() => JSON.parse(text));
  }
});
