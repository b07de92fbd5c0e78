import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { useDevAgent } from "./_test_agent.ts";
import { runCli } from "./run.ts";

const dev = useDevAgent("snapper");
const dir = mkdtempSync(join(tmpdir(), "cairn-snapshot-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function cli(...argv: string[]) {
  const io = dev.io();
  io.readFile = async (path) => new Uint8Array(readFileSync(path));
  const code = await runCli(argv, io);
  return { code, out: io.stdoutText, err: io.stderrText };
}

test("snapshot: save, inspect, restore brings the saved keys back and drops later ones", async () => {
  await dev.api.kv.put("app/one", "1");
  await dev.api.kv.put("app/two", "2");
  const file = join(dir, "backup.snap");
  const saved = await cli("snapshot", "save", file);
  assert.equal(saved.code, 0, saved.err);
  assert.match(saved.out, /^Saved and verified snapshot to index \d+\n$/);

  const inspected = await cli("snapshot", "inspect", file);
  assert.equal(inspected.code, 0, inspected.err);
  assert.match(inspected.out, /^ ID\s+\d+-\d+\n Size\s+\d+\n Index\s+\d+\n Version\s+1\n\n Type\s+Count\s+Size\n/);
  assert.match(inspected.out, /\n kvs\s+2\s+\d+B\n/);

  await dev.api.kv.put("app/three", "3");
  await dev.api.kv.delete("app/one");
  const restored = await cli("snapshot", "restore", file);
  assert.equal(restored.code, 0, restored.err);
  assert.equal(restored.out, "Restored snapshot\n");
  assert.deepEqual((await dev.api.kv.keys("app/")).keys, ["app/one", "app/two"]);
});

test("snapshot: a damaged file is refused by inspect and by the agent, and nothing changes", async () => {
  const file = join(dir, "good.snap");
  assert.equal((await cli("snapshot", "save", file)).code, 0);
  const bytes = readFileSync(file);
  const bad = join(dir, "bad.snap");
  writeFileSync(bad, bytes.subarray(0, bytes.length - 30));
  const inspected = await cli("snapshot", "inspect", bad);
  assert.equal(inspected.code, 1);
  assert.match(inspected.err, /^Error verifying snapshot: /);
  await dev.api.kv.put("stays", "x");
  const restored = await cli("snapshot", "restore", bad);
  assert.equal(restored.code, 1);
  assert.match(restored.err, /^Error restoring snapshot: Unexpected response code: 400 \(Invalid snapshot: /);
  assert.equal((await dev.api.kv.get("stays")).pair?.Key, "stays");
  assert.equal((await cli("snapshot", "save")).code, 1);
  assert.equal((await cli("snapshot", "inspect", join(dir, "missing.snap"))).code, 1);
});
