// End-to-end: limits.http_max_conns_per_client on a real `dist/cairn agent
// -dev`. Consul (hashicorp/go-connlimit, agent/agent.go) counts open HTTP
// connections per client IP from accept to close; one past the limit (200 by
// default) gets "429 Too Many Requests" ("Your IP is issuing too many
// concurrent connections, please rate limit your calls") and is closed. Other
// client IPs are not affected, and a closed connection frees its slot.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { startDevAgent, waitFor, type DevAgent } from "./harness.ts";

let agent: DevAgent;
const open: Socket[] = [];

before(async () => {
  agent = await startDevAgent();
});

after(async () => {
  for (const s of open) s.destroy();
  await agent?.stop();
});

/** One GET on a new connection from `from`, left open (keep-alive): the status line. */
function get(from: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port: agent.httpPort, localAddress: from });
    open.push(socket);
    let text = "";
    socket.on("error", reject);
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      if (text.includes("\r\n")) resolve(text.slice(0, text.indexOf("\r\n")));
    });
    socket.on("end", () => resolve(text.split("\r\n")[0]!));
    socket.write("GET /v1/status/leader HTTP/1.1\r\nHost: cairn\r\n\r\n");
  });
}

test("http_max_conns_per_client (default 200): connections past the limit from one IP get 429; other IPs and freed slots still work", async () => {
  // 250 at once from 127.0.0.1. The harness's own readiness polls may still
  // hold a kept-alive connection or two, so "about 200" succeed.
  const first = await Promise.all(Array.from({ length: 250 }, () => get("127.0.0.1")));
  const ok = first.filter((s) => s === "HTTP/1.1 200 OK").length;
  const refused = first.filter((s) => s === "HTTP/1.1 429 Too Many Requests").length;
  assert.equal(ok + refused, 250, `every answer is 200 or 429: ${[...new Set(first)].join(" | ")}`);
  assert.ok(ok >= 195 && ok <= 200, `${ok} admitted, limit 200`);
  assert.ok(refused >= 50, `${refused} refused`);

  // Another client IP has its own count.
  assert.equal(await get("127.0.0.2"), "HTTP/1.1 200 OK");

  // Closing the admitted connections frees their slots.
  for (const s of open.splice(0)) s.destroy();
  await waitFor(async () => (await get("127.0.0.1")) === "HTTP/1.1 200 OK", { what: "a slot for 127.0.0.1 again", timeoutMs: 10_000 });
});
