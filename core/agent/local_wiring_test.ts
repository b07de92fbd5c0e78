// The agent wires local state into the HTTP API: register through the real
// listener, see it in /v1/agent/services, reload from the config file.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { buildConfig } from "../config/mod.ts";
import { FanoutSink } from "../log/mod.ts";
import { startAgent } from "./agent.ts";

test("dev agent: agent service endpoints are routed; reload applies the config file's services", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-wiring-"));
  const file = join(dir, "svc.json");
  writeFileSync(file, JSON.stringify({ service: { name: "from-file", port: 1 } }));
  const config = buildConfig({
    dev: true,
    sources: [{ name: file, text: JSON.stringify({ service: { name: "from-file", port: 1 } }), format: "json" }],
    // Port 0: the OS picks free gossip ports (fixed ones collide with a running agent or another
    // test). -dev opens no server RPC listener, so ports.server is only advertised.
    flags: { ports: { http: 0, dns: -1, serfLan: 0, serfWan: 0, server: 8300 }, nodeName: "wired" },
  });
  const agent = await startAgent(config, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() });
  try {
    const base = `http://127.0.0.1:${agent.httpAddr!.port}`;
    let r = await fetch(`${base}/v1/agent/service/register`, { method: "PUT", body: JSON.stringify({ Name: "api", Port: 8080 }) });
    assert.equal(r.status, 200, await r.text());
    r = await fetch(`${base}/v1/agent/services`);
    assert.deepEqual(Object.keys(await r.json()), ["api", "from-file"]);
    // Anti-entropy pushed it to the catalog before the PUT returned.
    r = await fetch(`${base}/v1/catalog/service/api`);
    assert.deepEqual(((await r.json()) as Array<{ ServicePort: number; Node: string }>).map((e) => [e.Node, e.ServicePort]), [["wired", 8080]]);
    writeFileSync(file, JSON.stringify({ services: [{ name: "reloaded" }] }));
    r = await fetch(`${base}/v1/agent/reload`, { method: "PUT" });
    assert.equal(r.status, 200, await r.text());
    r = await fetch(`${base}/v1/agent/services`);
    assert.deepEqual(Object.keys(await r.json()), ["api", "reloaded"]);
    r = await fetch(`${base}/v1/agent/self`);
    assert.equal(((await r.json()) as { Stats: { agent: { services: string } } }).Stats.agent.services, "2");
  } finally {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
