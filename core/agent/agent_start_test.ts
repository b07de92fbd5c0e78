// A start that fails half way must release everything that already started:
// the closer stack (core/agent/closers.ts) stops it in reverse order.
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { createServer } from "node:net";
import { test } from "node:test";
import { buildConfig } from "../config/mod.ts";
import { FanoutSink } from "../log/mod.ts";
import { startAgent } from "./agent.ts";

/** A port free for TCP and UDP on 127.0.0.1 now. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    if (await canBind(port)) return port;
  }
}

/** Whether TCP and UDP can both bind `port` on 127.0.0.1 right now. */
async function canBind(port: number): Promise<boolean> {
  const tcp = await new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
  const udp = await new Promise<boolean>((resolve) => {
    const s = createSocket("udp4");
    s.once("error", () => {
      s.close();
      resolve(false);
    });
    s.bind(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
  return tcp && udp;
}

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

test("agent: a -join that fails after everything started releases every socket too", async () => {
  const ports = { http: await freePort(), dns: await freePort(), serfLan: await freePort() };
  const dead = await freePort();
  await assert.rejects(startAgent(config(ports, { startJoin: [`127.0.0.1:${dead}`] }), { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() }));
  for (const [name, port] of Object.entries(ports)) assert.ok(await canBind(port), `${name} port ${port} is free again`);
});
