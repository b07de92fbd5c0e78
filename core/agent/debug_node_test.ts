import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgentDebug, diskUsage, hostFacts, redactSecrets } from "./debug_node.ts";

test("redactSecrets: every occurrence, across chunk boundaries, JSON stays valid, short strings left alone", () => {
  const key = "pUqJrVyVRj5jsiYEkM/tFQYfWyJxr3hbaD0E5ySyYeo=";
  const text = JSON.stringify({ strings: [key, `encrypt=${key};`, "ab", 'quo"te-secret'] });
  // Cut into 7-character chunks: every secret straddles at least one boundary.
  const chunks = text.match(/[\s\S]{1,7}/g)!;
  const out = [...redactSecrets(chunks, [key, "ab", 'quo"te-secret'])].join("");
  assert.ok(!out.includes(key));
  assert.ok(!out.includes("quo"));
  assert.deepEqual(JSON.parse(out), { strings: ["<redacted>", "encrypt=<redacted>;", "ab", "<redacted>"] });
});

test("host facts: memory, CPUs, host, and the data dir's file system", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-host-"));
  try {
    const h = await hostFacts(dir);
    assert.ok(h.Memory.total > 0 && h.Memory.available > 0);
    assert.ok(h.CPU.length > 0);
    assert.ok(h.Host.hostname !== "" && h.Host.uptime > 0);
    assert.equal(h.Disk?.path, dir);
    assert.ok(h.Disk!.total > 0 && h.Disk!.usedPercent >= 0 && h.Disk!.usedPercent <= 100);
    assert.deepEqual(h.Errors, {});
    const dev = await hostFacts("");
    assert.equal(dev.Disk, null);
    assert.match(dev.Errors.disk!, /-dev/);
    await assert.rejects(diskUsage(join(dir, "missing")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("CPU profile and heap snapshot of this process, the heap without its secrets", async () => {
  const secret = `s3cret-${"k".repeat(20)}`;
  const holder = { secret: [secret, "x"].join("") }; // a live string the snapshot would show
  const debug = createAgentDebug({ enableDebug: () => true, dataDir: "", secrets: () => [secret] });
  const ac = new AbortController();
  const pending = debug.cpuProfile({ seconds: 60, signal: ac.signal });
  await assert.rejects(debug.cpuProfile({ seconds: 1 }), /already/);
  ac.abort(); // the client went away: the profile ends early with what it has
  const profile = JSON.parse(await pending) as { nodes: unknown[]; startTime: number; endTime: number };
  assert.ok(profile.nodes.length > 0 && profile.endTime >= profile.startTime);
  const heap = [...(await debug.heapSnapshot({ redact: ["caller-token-12345"] }))].join("");
  const parsed = JSON.parse(heap) as { snapshot: { node_count: number }; strings: string[] };
  assert.ok(parsed.snapshot.node_count > 0);
  assert.ok(!heap.includes(secret));
  assert.ok(parsed.strings.some((s) => s.includes("<redacted>")));
  assert.ok(holder.secret.length > 0);
});
