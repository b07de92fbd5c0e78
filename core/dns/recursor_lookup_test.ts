// createRecursorLookup: hostnames that SRV answers point at, asked of the
// recursors as Consul's resolveCNAME does (one A question, recursors in
// order, each with the timeout), over real UDP sockets on 127.0.0.1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import * as dnsPacket from "dns-packet";
import { Rng } from "../sim/rng.ts";
import { createRecursorLookup, recursorOrder } from "./serve_node.ts";

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

test("recursor_strategy: sequential asks in the order listed; random spreads the first question over all recursors", async () => {
  const listed = ["a", "b", "c"];
  const rng = new Rng(11);
  for (let i = 0; i < 5; i++) assert.deepEqual(recursorOrder(listed, "sequential", rng), listed);
  const firsts = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const order = recursorOrder(listed, "random", rng);
    assert.deepEqual([...order].sort(), listed, "a permutation");
    firsts.add(order[0]!);
  }
  assert.deepEqual([...firsts].sort(), listed, "each recursor is asked first sometimes");
  assert.deepEqual(listed, ["a", "b", "c"], "the configured list is left alone");

  // Through the lookup: two answering recursors, random order → both get asked first over a few lookups.
  const one = await cnameRecursor();
  const two = await cnameRecursor();
  try {
    const lookup = createRecursorLookup({ recursors: [`127.0.0.1:${one.port}`, `127.0.0.1:${two.port}`], timeoutMs: 500, strategy: "random", rng: new Rng(3) });
    for (let i = 0; i < 12; i++) await lookup("x.example.com.");
    assert.ok(one.seen.length > 0 && two.seen.length > 0, `both asked: ${one.seen.length} / ${two.seen.length}`);
    const seq = createRecursorLookup({ recursors: [`127.0.0.1:${one.port}`, `127.0.0.1:${two.port}`], timeoutMs: 500, rng: new Rng(3) });
    const before = two.seen.length;
    for (let i = 0; i < 5; i++) await seq("x.example.com.");
    assert.equal(two.seen.length, before, "sequential never skips the first, answering recursor");
  } finally {
    one.sock.close();
    two.sock.close();
  }
});
