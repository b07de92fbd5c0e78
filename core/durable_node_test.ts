import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileDurable, writeFileDurableSync } from "./durable_node.ts";

test("durable write: replaces the file, leaves no temporary file, keeps the mode of a new file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-durable-"));
  try {
    const path = join(dir, "state.json");
    await writeFileDurable(path, "one", { mode: 0o600 });
    assert.equal(readFileSync(path, "utf8"), "one");
    assert.equal(statSync(path).mode & 0o777, 0o600);
    writeFileDurableSync(path, new TextEncoder().encode("two"), { tmpTag: "sync" });
    assert.equal(readFileSync(path, "utf8"), "two");
    assert.deepEqual(readdirSync(dir), ["state.json"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("durable write: an abort before the rename leaves the old file and no temporary one", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-durable-"));
  try {
    const path = join(dir, "snap");
    writeFileDurableSync(path, "kept");
    const stop = new AbortController();
    const pending = writeFileDurable(path, "late", { signal: stop.signal });
    stop.abort();
    await pending;
    assert.equal(readFileSync(path, "utf8"), "kept");
    assert.deepEqual(readdirSync(dir), ["snap"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
