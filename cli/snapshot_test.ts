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
  assert.match(inspected.out, /^ ID {11}\d+-\d+-\d+\n Size {9}\d+\n Index {8}\d+\n Term {9}\d+\n Version {6}1\n\n Type +Count +Size +\n ---- +---- +---- +\n/);
  assert.match(inspected.out, /\n kvs +2 +\d+B +\n/);
  assert.match(inspected.out, /\n ---- +---- +---- +\n Total +\d+(\.\d)?[KM]?B\n$/);

  const details = await cli("snapshot", "inspect", "-kvdetails", "-kvdepth", "1", file);
  assert.equal(details.code, 0, details.err);
  assert.match(details.out, /\n Key Name {21}Count {25}Size {26}\n ---- +---- +---- +\n app {26}2 +\d+B +\n/);
  const json = await cli("snapshot", "inspect", "-format", "json", "-kvdetails", "-kvfilter", "app/t", file);
  assert.equal(json.code, 0, json.err);
  const parsed = JSON.parse(json.out) as { Meta: { Index: number; Version: number }; Stats: { Name: string; Count: number }[]; StatsKV: { Name: string; Count: number }[]; TotalSizeKV: number };
  assert.equal(parsed.Meta.Version, 1);
  assert.equal(parsed.Stats.find((s) => s.Name === "kvs")?.Count, 2);
  assert.deepEqual(parsed.StatsKV.map((s) => [s.Name, s.Count]), [["app/two", 1]]);
  assert.ok(json.out.startsWith('{\n   "Meta": {\n      "ID": '), "Go's MarshalIndent with three spaces");
  assert.equal((await cli("snapshot", "inspect", "-kvdepth", "3", file)).code, 1, "-kvdepth needs -kvdetails");
  assert.equal((await cli("snapshot", "inspect", "-format", "yaml", file)).code, 1);

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
