import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { LogFileSink, logFileTarget } from "./file_sink_node.ts";
import type { LogRecord } from "./logger.ts";

function record(message: string, timeMs = 0): LogRecord {
  return { timeMs, level: "info", name: "agent", message, fields: {} };
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "cairn-logfile-"));
}

test("log_file: a path names the file, a trailing separator a directory holding consul.log", () => {
  assert.deepEqual(logFileTarget("/var/log/agent.log"), { dir: "/var/log", name: "agent.log" });
  assert.deepEqual(logFileTarget("/var/log/"), { dir: "/var/log/", name: "consul.log" });
});

test("log_file: the active file is truncated at start and gets every line", (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "consul.log"), "old run\n");
  const sink = new LogFileSink({ path: `${dir}/` });
  sink.write(record("one"));
  sink.write(record("two"));
  sink.close();
  const text = readFileSync(join(dir, "consul.log"), "utf8");
  assert.doesNotMatch(text, /old run/);
  assert.match(text, /one\n.*two\n$/s);
});

test("log_rotate_bytes: the file is renamed to name-<unix ns>.ext once it holds the limit", (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let now = 1_700_000_000_000;
  const sink = new LogFileSink({ path: join(dir, "agent.log"), rotateBytes: 10, now: () => now });
  sink.write(record("first line, longer than ten bytes"));
  now += 5;
  sink.write(record("second"));
  sink.close();
  const files = readdirSync(dir).sort();
  assert.deepEqual(files, ["agent-1700000000005000000.log", "agent.log"]);
  assert.match(readFileSync(join(dir, "agent-1700000000005000000.log"), "utf8"), /first line/);
  assert.match(readFileSync(join(dir, "agent.log"), "utf8"), /second/);
});

test("log_rotate_duration: a file older than the duration is rotated before the next write; no extension gets .log", (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let now = 1_000;
  const sink = new LogFileSink({ path: join(dir, "agent"), rotateDurationMs: 60_000, now: () => now });
  sink.write(record("a"));
  now += 59_999;
  sink.write(record("b"));
  assert.equal(readdirSync(dir).length, 1);
  now += 1;
  sink.write(record("c"));
  sink.close();
  assert.deepEqual(readdirSync(dir).sort(), ["agent", "agent-61000000000.log"]);
  assert.match(readFileSync(join(dir, "agent"), "utf8"), /c\n$/);
});

test("log_rotate_max_files: only the newest archives are kept; -1 keeps none, 0 all", (t) => {
  for (const [maxFiles, kept] of [[2, 2], [-1, 0], [0, 4]] as const) {
    const dir = tempDir();
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    let now = 1_000;
    const sink = new LogFileSink({ path: join(dir, "consul.log"), rotateBytes: 1, maxFiles, now: () => now });
    for (let i = 0; i < 5; i++) {
      sink.write(record(`line ${i}`));
      now += 1;
    }
    sink.close();
    const archives = readdirSync(dir).filter((f) => f !== "consul.log").sort();
    assert.equal(archives.length, kept, `max files ${maxFiles}: ${archives.join(", ")}`);
    if (maxFiles === 2) {
      // The newest two: lines 2 and 3 (line 4 is in the active file).
      assert.match(readFileSync(join(dir, archives[0]!), "utf8"), /line 2/);
      assert.match(readFileSync(join(dir, archives[1]!), "utf8"), /line 3/);
    }
  }
});
