// createRecursorLookup: hostnames that SRV answers point at, asked of the
// recursors as Consul's resolveCNAME does (one A question, recursors in
// order, each with the timeout), over real UDP sockets on 127.0.0.1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import * as dnsPacket from "dns-packet";
import { Rng } from "../sim/rng.ts";
import { createRecursorLookup } from "./serve_node.ts";

/** A resolver that answers A questions with a CNAME to `real.example.` and its A record. */
async function cnameRecursor(): Promise<{ port: number; sock: UdpSocket; seen: string[] }> {
  const sock = createSocket("udp4");
  const seen: string[] = [];
  sock.on("message", (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions![0]!;
    seen.push(`${question.type} ${question.name}`);
    sock.send(dnsPacket.encode({
      type: "response",
      id: q.id,
      flags: dnsPacket.RECURSION_AVAILABLE,
      questions: q.questions,
      answers: [
        { type: "CNAME", name: question.name, ttl: 60, data: "real.example" },
        { type: "A", name: "real.example", ttl: 60, data: "192.0.2.44" },
        { type: "TXT", name: "real.example", ttl: 60, data: "ignored" },
      ],
    }), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  return { port: sock.address().port, sock, seen };
}

test("recursor lookup: the first recursor that answers, its CNAME and A records; none answering is []", async () => {
  const good = await cnameRecursor();
  const dead = createSocket("udp4");
  await new Promise<void>((r) => dead.bind(0, "127.0.0.1", () => r()));
  try {
    const lookup = createRecursorLookup({
      recursors: [`127.0.0.1:${dead.address().port}`, `127.0.0.1:${good.port}`],
      timeoutMs: 200,
      rng: new Rng(5),
    });
    const records = await lookup("cache.example.com.");
    assert.deepEqual(good.seen, ["A cache.example.com"]);
    assert.deepEqual(records.map((r) => `${r.name} ${r.type} ${r.data}`), [
      "cache.example.com. CNAME real.example.",
      "real.example. A 192.0.2.44",
    ]);
    const none = createRecursorLookup({ recursors: [`127.0.0.1:${dead.address().port}`], timeoutMs: 100, rng: new Rng(6) });
    assert.deepEqual(await none("cache.example.com."), []);
  } finally {
    good.sock.close();
    dead.close();
  }
});
