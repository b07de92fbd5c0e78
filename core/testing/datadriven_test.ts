import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { normalizeOutput, parseScript, runFile } from "./datadriven.ts";
import type { TestData } from "./datadriven.ts";

const script = `# A comment.
add-nodes 3 seed=7 x
----
ok

# Input lines sit between the command and ----.
sum
1
2
----
3
`;

function echo(d: TestData): string {
  if (d.cmd === "sum") return String(d.input.split("\n").reduce((s, x) => s + Number(x), 0));
  return "";
}

test("datadriven: commands, positional words, key=value words, input, expected output", () => {
  const [a, b] = parseScript(script, "s.txt");
  assert.deepEqual(a, { pos: "s.txt:2", cmd: "add-nodes", args: ["3", "x"], kv: { seed: "7" }, input: "", expected: "ok" });
  assert.deepEqual(b, { pos: "s.txt:7", cmd: "sum", args: [], kv: {}, input: "1\n2", expected: "3" });
});

test("datadriven: a command without ---- is a SyntaxError naming the line", () => {
  assert.throws(() => parseScript("tick 1\n\nother\n----\nok\n", "bad.txt"), { name: "SyntaxError", message: 'bad.txt:1: expected ---- after "tick 1"' });
});

test("datadriven: outputs are never empty and hold no blank lines", () => {
  assert.equal(normalizeOutput(""), "ok");
  assert.equal(normalizeOutput("\n a\n\n\nb  \n"), " a\nb");
});

test("datadriven: runFile passes, fails naming file and line, rewrites keeping comments and input", () => {
  const dir = mkdtempSync(join(tmpdir(), "datadriven-"));
  try {
    const path = join(dir, "s.txt");
    writeFileSync(path, script);
    runFile(path, echo, { rewrite: false });
    writeFileSync(path, script.replace("----\n3", "----\n4"));
    assert.throws(() => runFile(path, echo, { rewrite: false }), /s\.txt:7: sum/);
    runFile(path, echo, { rewrite: true });
    assert.equal(readFileSync(path, "utf8"), script);
    assert.throws(() => runFile(path, () => { throw new Error("boom"); }, { rewrite: false }), { message: "s.txt:2: add-nodes: boom" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
