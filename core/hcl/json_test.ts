import assert from "node:assert/strict";
import { test } from "node:test";
import { HclSyntaxError, parseJsonDocument } from "./mod.ts";

test("json: the values JSON.parse gives", () => {
  for (const t of ["{}", "[]", '{"a": [1, -2.5e3, true, false, null, "x\\n\\u00e9"]}', ' "s" ', "0", '{"a": 1, "a": 2}', '{"__proto__": {"x": 1}}']) {
    assert.deepEqual(parseJsonDocument(t).value, JSON.parse(t), t);
  }
});

test("json: the offset of the first problem and what was expected there", () => {
  const cases: [string, number, RegExp][] = [
    ['{\n  "ports": { "http": }\n}', 23, /expected a value/],
    ['{"a": 1,}', 8, /quoted key/],
    ['{"a" 1}', 5, /expected ":"/],
    ["[1 2]", 3, /"," or "]"/],
    ['{"a": "x', 8, /unterminated/],
    ["{} x", 3, /after the end/],
    ["", 0, /end of input/],
    ['{"a": 01}', 7, /"," or "}"/],
    ['"\\q"', 2, /bad escape/],
  ];
  for (const [text, offset, reason] of cases) {
    assert.throws(() => JSON.parse(text));
    try {
      parseJsonDocument(text, { file: "f.json" });
      assert.fail(`expected an error for ${JSON.stringify(text)}`);
    } catch (err) {
      assert.ok(err instanceof HclSyntaxError);
      assert.equal(err.offset, offset, text);
      assert.match(err.reason, reason, text);
      assert.equal(err.file, "f.json");
    }
  }
  try {
    parseJsonDocument('{\n  "server": true,\n}\n');
  } catch (err) {
    assert.ok(err instanceof HclSyntaxError);
    assert.deepEqual([err.line, err.column], [3, 1]);
  }
});

test("json: positions of keys and list elements", () => {
  const doc = parseJsonDocument('{\n  "ports": {\n    "http": 1\n  },\n  "l": [\n    "a",\n      "b"\n  ]\n}');
  const v = doc.value as { ports: object; l: unknown[] };
  assert.deepEqual(doc.position(v, "ports"), { line: 2, column: 3 });
  assert.deepEqual(doc.position(v.ports, "http"), { line: 3, column: 5 });
  assert.deepEqual(doc.position(v.l, 1), { line: 7, column: 7 });
});
