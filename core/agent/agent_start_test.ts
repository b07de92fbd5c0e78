// A start that fails half way must release everything that already started:
// the closer stack (core/agent/closers.ts) stops it in reverse order.
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { buildConfig } from "../config/mod.ts";
import { FanoutSink } from "../log/mod.ts";
import { startAgent } from "./agent.ts";
import { canBind, freePort } from "../testing/free_port_node.ts";

function config(ports: { http: number; dns: number; serfLan: number }, extra: Record<string, unknown> = {}) {
  return buildConfig({
    dev: true,
    sources: [],
    flags: { ports: { ...ports, serfWan: 0, server: 8300 }, nodeName: "half-started", bindAddr: "127.0.0.1", clientAddr: "127.0.0.1", ...extra },
  });
}

test("agent: a start that fails at its last listener releases every socket it had opened", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const blocker = createSocket("udp4");
  await new Promise<void>((resolve) => blocker.bind(ports.dns, "127.0.0.1", resolve));
  try {
    await assert.rejects(startAgent(config(ports), { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() }), /DNS|dns|8600|address already in use/i);
  } finally {
    await new Promise<void>((resolve) => blocker.close(resolve));
  }
  assert.ok(await canBind(ports.http), "the HTTP port is free again");
  assert.ok(await canBind(ports.serfLan), "the gossip ports (TCP and UDP) are free again");
});

test("agent: -join to a dead address does not stop the start (an alias of -retry-join since Consul 1.15)", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const dead = await freePort();
  const agent = await startAgent(config(ports, { startJoin: [`127.0.0.1:${dead}`], retryIntervalMs: 60_000 }), { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() });
  await agent.stop();
  for (const [name, port] of Object.entries(ports)) assert.ok(await canBind(port), `${name} port ${port} is free again`);
});

test("agent: pid_file is written at start and removed at stop; log_file gets the log", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-agent-files-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const pidFile = join(dir, "cairn.pid");
  const agent = await startAgent(config(ports, { pidFile, logFile: `${dir}/` }), { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() });
  try {
    assert.equal(readFileSync(pidFile, "utf8"), String(process.pid));
    assert.match(readFileSync(join(dir, "consul.log"), "utf8"), /\[INFO\] +agent: started/);
  } finally {
    await agent.stop();
  }
  assert.equal(existsSync(pidFile), false, "the pid file is gone after stop");
});

test("agent: a pid_file that cannot be written stops the start with its path", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  await assert.rejects(
    startAgent(config(ports, { pidFile: "/nonexistent-dir/cairn.pid" }), { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() }),
    /Could not open pid file "\/nonexistent-dir\/cairn.pid"/,
  );
  for (const [name, port] of Object.entries(ports)) assert.ok(await canBind(port), `${name} port ${port} is free again`);
});

test("agent: a space-separated client_addr (-client \"a b\") serves HTTP and DNS on each address", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const agent = await startAgent(config(ports, { clientAddr: "127.0.0.1 127.0.0.2" }), { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() });
  try {
    for (const host of ["127.0.0.1", "127.0.0.2"]) {
      const res = await fetch(`http://${host}:${ports.http}/v1/status/leader`);
      assert.equal(res.status, 200, `HTTP on ${host}`);
      await res.body?.cancel();
      const udp = createSocket("udp4");
      const taken = await new Promise<boolean>((resolve) => {
        udp.once("error", () => resolve(true));
        udp.bind(ports.dns, host, () => resolve(false));
      });
      udp.close();
      assert.equal(taken, true, `DNS on ${host}:${ports.dns}`);
    }
  } finally {
    await agent.stop();
  }
});

test("agent: reload applies node_meta to the catalog (Consul reloads node metadata)", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const first = config(ports, { nodeMeta: { rack: "r1" } });
  let next = first;
  const agent = await startAgent(first, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink(), reloadConfig: () => next });
  const meta = async () => {
    const r = await fetch(`http://127.0.0.1:${ports.http}/v1/catalog/node/half-started`);
    return r.ok ? ((await r.json()) as { Node?: { Meta?: Record<string, string> } }).Node?.Meta : undefined;
  };
  try {
    for (let i = 0; i < 200 && (await meta())?.rack !== "r1"; i++) await new Promise((r) => setTimeout(r, 25));
    assert.deepEqual(await meta(), { rack: "r1" });
    next = { ...first, nodeMeta: { rack: "r2", zone: "a" } };
    await agent.reload();
    assert.deepEqual(await meta(), { rack: "r2", zone: "a" });
    const self = (await (await fetch(`http://127.0.0.1:${ports.http}/v1/agent/self`)).json()) as { Meta: Record<string, string> };
    assert.deepEqual(self.Meta, { rack: "r2", zone: "a" }, "/v1/agent/self shows the reloaded meta");
  } finally {
    await agent.stop();
  }
});

test("agent: reload applies raft_snapshot_threshold to the running Raft; an invalid config is refused and changes nothing", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const first = config(ports, { raftSnapshotThreshold: 100_000, raftSnapshotIntervalMs: 50 });
  let next = first;
  const agent = await startAgent(first, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink(), reloadConfig: () => next });
  const base = `http://127.0.0.1:${ports.http}`;
  const lastSnapshot = async () =>
    Number(((await (await fetch(`${base}/v1/agent/self`)).json()) as { Stats: { raft: { last_snapshot_index: string } } }).Stats.raft.last_snapshot_index);
  try {
    for (let i = 0; i < 10; i++) assert.equal((await fetch(`${base}/v1/kv/k${i}`, { method: "PUT", body: "v" })).status, 200);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await lastSnapshot(), 0, "below the threshold");
    next = { ...first, raftSnapshotThreshold: 0 };
    await assert.rejects(agent.reload(), /raft_snapshot_threshold/);
    next = { ...first, raftSnapshotThreshold: 5 };
    await agent.reload();
    for (let i = 0; i < 100 && (await lastSnapshot()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok((await lastSnapshot()) >= 10, "a snapshot at the new threshold");
  } finally {
    await agent.stop();
  }
});
