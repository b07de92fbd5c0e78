import { test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { connect, createServer as createNetServer } from "node:net";
import * as dnsPacket from "dns-packet";
import { Rng, seeds } from "../sim/rng.ts";
import { createDnsResolver } from "./driver.ts";
import { createDnsServer, DnsListenError, parseRecursor, type DnsServer } from "./serve_node.ts";
import { FakeBackend, makeInstance, makeNode, testConfig } from "./_fake_backend.ts";

interface Rec {
  type: string;
  name: string;
  data?: unknown;
  udpPayloadSize?: number;
}
interface Reply {
  id: number;
  type: string;
  rcode: string;
  flag_aa: boolean;
  flag_tc: boolean;
  flag_rd: boolean;
  flag_ra: boolean;
  questions: Array<{ name: string; type: string }>;
  answers: Rec[];
  authorities: Rec[];
  additionals: Rec[];
}

function decode(bytes: Uint8Array): Reply {
  return dnsPacket.decode(Buffer.from(bytes)) as unknown as Reply;
}

async function startServer(options: { recursors?: string[]; recursorTimeoutMs?: number; maxTcpQueryBytes?: number; disableCompression?: boolean } = {}) {
  const backend = new FakeBackend();
  const n1 = makeNode("n1", "10.0.0.1", { rack: "r1" });
  backend.nodes.push(n1);
  for (let i = 1; i <= 20; i++) backend.instances.push(makeInstance(makeNode(`node${i}`, `10.1.0.${i}`), "web", { port: 8000 + i }));
  const resolver = createDnsResolver({
    backend,
    config: testConfig({ hasRecursors: (options.recursors ?? []).length > 0, enableTruncate: true }),
    rng: new Rng(7),
    wallNow: () => 1_700_000_000_000,
  });
  const server = createDnsServer({ resolver, ...options });
  const addr = await server.listen({ host: "127.0.0.1", port: 0 });
  return { server, port: addr.port, backend };
}

function query(name: string, type: dnsPacket.RecordType, options: { id?: number; edns?: number; rd?: boolean } = {}): Buffer {
  return dnsPacket.encode({
    type: "query",
    id: options.id ?? 4242,
    flags: options.rd === false ? 0 : dnsPacket.RECURSION_DESIRED,
    questions: [{ name, type, class: "IN" }],
    additionals: options.edns
      ? [{ type: "OPT", name: ".", udpPayloadSize: options.edns, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as dnsPacket.Answer]
      : [],
  });
}

/** Send one datagram and wait for one reply (or undefined after timeoutMs). */
function udpAsk(port: number, bytes: Uint8Array, timeoutMs = 1_000): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const sock = createSocket("udp4");
    const timer = setTimeout(() => { sock.close(); resolve(undefined); }, timeoutMs);
    sock.once("message", (msg) => { clearTimeout(timer); sock.close(); resolve(msg); });
    sock.send(bytes, port, "127.0.0.1");
  });
}

function frame(msg: Uint8Array): Buffer {
  const out = Buffer.alloc(2 + msg.length);
  out.writeUInt16BE(msg.length, 0);
  Buffer.from(msg).copy(out, 2);
  return out;
}

/** Write chunks over one TCP connection; collect `want` framed replies (or stop when the server closes). */
function tcpExchange(port: number, chunks: Uint8Array[], want: number): Promise<{ replies: Reply[]; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    let buf = Buffer.alloc(0);
    const replies: Reply[] = [];
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`tcp: ${replies.length}/${want} replies`)); }, 3_000);
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const len = buf.readUInt16BE(0);
        replies.push(decode(buf.subarray(2, 2 + len)));
        buf = buf.subarray(2 + len);
      }
      if (replies.length >= want) { clearTimeout(timer); sock.destroy(); resolve({ replies, closed: false }); }
    });
    sock.on("close", () => { clearTimeout(timer); resolve({ replies, closed: true }); });
    sock.on("error", () => {});
    sock.on("connect", async () => {
      for (const c of chunks) {
        sock.write(c);
        await new Promise((r) => setImmediate(r));
      }
    });
  });
}

async function withServer(fn: (s: { server: DnsServer; port: number; backend: FakeBackend }) => Promise<void>, options = {}) {
  const s = await startServer(options);
  try {
    await fn(s);
  } finally {
    await s.server.close();
  }
}

test("UDP: answers a query; EDNS0 OPT is echoed; AA and RD flags", async () => {
  await withServer(async ({ port }) => {
    const reply = decode((await udpAsk(port, query("n1.node.consul.", "A")))!);
    assert.equal(reply.id, 4242);
    assert.equal(reply.type, "response");
    assert.equal(reply.rcode, "NOERROR");
    assert.equal(reply.flag_aa, true);
    assert.equal(reply.flag_rd, true);
    assert.deepEqual(reply.answers!.map((a) => [a.type, a.data]), [["A", "10.0.0.1"]]);
    assert.equal(reply.additionals!.some((a) => a.type === "OPT"), false, "no OPT unless asked");

    const edns = decode((await udpAsk(port, query("web.service.consul.", "SRV", { edns: 4096 })))!);
    const opt = edns.additionals.find((a) => a.type === "OPT");
    assert.ok(opt, "OPT echoed");
    assert.equal(opt.udpPayloadSize, 4096);
    assert.equal(edns.answers!.length, 20, "EDNS0 4096 fits all 20 SRV records");
    assert.equal(edns.flag_tc, false);

    const plain = await udpAsk(port, query("web.service.consul.", "SRV"));
    assert.ok(plain!.length <= 512);
    const p = decode(plain!);
    assert.equal(p.answers!.length, 3);
    assert.equal(p.flag_tc, true, "enable_truncate sets TC");
  });
});

test("bad input: short and response packets are dropped, undecodable ones get FORMERR, and the server keeps answering", async () => {
  await withServer(async ({ server, port }) => {
    assert.equal(await udpAsk(port, new Uint8Array([1, 2, 3]), 200), undefined);
    const asResponse = query("n1.node.consul.", "A");
    asResponse[2]! |= 0x80;
    assert.equal(await udpAsk(port, asResponse, 200), undefined);
    // Header claims one question, body is missing.
    const hdr = new Uint8Array([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    const formerr = decode((await udpAsk(port, hdr))!);
    assert.equal(formerr.id, 0x1234);
    assert.equal(formerr.rcode, "FORMERR");
    const noQuestion = decode((await udpAsk(port, new Uint8Array([0, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])))!);
    assert.equal(noQuestion.rcode, "FORMERR");
    const notQuery = new Uint8Array(query("n1.node.consul.", "A"));
    notQuery[2] = (notQuery[2]! & 0x87) | (2 << 3); // opcode STATUS
    assert.equal(decode((await udpAsk(port, notQuery))!).rcode, "NOTIMP");
    const rng = new Rng(99);
    for (let i = 0; i < 200; i++) {
      const junk = new Uint8Array(rng.range(0, 300));
      for (let j = 0; j < junk.length; j++) junk[j] = rng.int(256);
      junk[2] = junk.length > 2 ? junk[2]! & 0x07 : 0; // mostly queries, so they reach the decoder
      await server.handle(junk, "udp");
    }
    assert.ok(server.counters.dropped >= 2);
    assert.ok(server.counters.formErr >= 2);
    const ok = decode((await udpAsk(port, query("n1.node.consul.", "A")))!);
    assert.equal(ok.rcode, "NOERROR", "still serving after garbage");
  });
});

test("TCP: two queries in one write, one split across writes, answers untrimmed", async () => {
  await withServer(async ({ port }) => {
    const q1 = frame(query("n1.node.consul.", "A", { id: 1 }));
    const q2 = frame(query("web.service.consul.", "SRV", { id: 2 }));
    const q3 = frame(query("nope.node.consul.", "A", { id: 3 }));
    const { replies } = await tcpExchange(port, [Buffer.concat([q1, q2]), q3.subarray(0, 1), q3.subarray(1, 9), q3.subarray(9)], 3);
    const byId = new Map(replies.map((r) => [r.id, r]));
    assert.deepEqual(byId.get(1)!.answers!.map((a) => a.data), ["10.0.0.1"]);
    assert.equal(byId.get(2)!.answers!.length, 20, "TCP answers are not trimmed");
    assert.equal(byId.get(2)!.flag_tc, false);
    assert.equal(byId.get(3)!.rcode, "NXDOMAIN");
    assert.equal(byId.get(3)!.authorities![0]!.type, "SOA");
  });
});

test("TCP: an oversized frame closes the connection and is counted", async () => {
  await withServer(async ({ server, port }) => {
    const big = Buffer.alloc(2);
    big.writeUInt16BE(600, 0);
    const { replies, closed } = await tcpExchange(port, [big, Buffer.alloc(100)], 1);
    assert.equal(replies.length, 0);
    assert.equal(closed, true);
    assert.equal(server.counters.tcpFramesRefused, 1);
  }, { maxTcpQueryBytes: 512 });
});

/** A tiny resolver: answers every A question with 192.0.2.1. */
async function fakeRecursor(): Promise<{ port: number; sock: UdpSocket; seen: string[] }> {
  const sock = createSocket("udp4");
  const seen: string[] = [];
  sock.on("message", (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    seen.push(q.questions![0]!.name);
    const reply = dnsPacket.encode({
      type: "response",
      id: q.id,
      flags: dnsPacket.RECURSION_AVAILABLE,
      questions: q.questions,
      answers: [{ type: "A", name: q.questions![0]!.name, ttl: 60, data: "192.0.2.1" }],
    });
    sock.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  return { port: sock.address().port, sock, seen };
}

/** A UDP port that swallows everything (a recursor that never answers). */
async function blackHole(): Promise<UdpSocket> {
  const sock = createSocket("udp4");
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  return sock;
}

test("recursors: names outside the domain go to each recursor in order, with the timeout; none answering is SERVFAIL", async () => {
  const good = await fakeRecursor();
  const dead = await blackHole();
  try {
    await withServer(async ({ server, port, backend }) => {
      const reply = decode((await udpAsk(port, query("example.com.", "A", { id: 77 }), 2_000))!);
      assert.equal(reply.id, 77);
      assert.deepEqual(reply.answers!.map((a) => a.data), ["192.0.2.1"]);
      assert.deepEqual(good.seen, ["example.com"]);
      assert.equal(backend.calls, 0);
      assert.equal(server.counters.forwarded, 1);
      const local = decode((await udpAsk(port, query("n1.node.consul.", "A")))!);
      assert.equal(local.flag_ra, true, "RA when recursors are configured");
      const tcp = await tcpExchange(port, [frame(query("example.org.", "A", { id: 5 }))], 1);
      assert.deepEqual(tcp.replies[0]!.answers!.map((a) => a.data), ["192.0.2.1"], "TCP clients are forwarded too");
    }, { recursors: [`127.0.0.1:${dead.address().port}`, `127.0.0.1:${good.port}`], recursorTimeoutMs: 200 });
    await withServer(async ({ server, port }) => {
      const reply = decode((await udpAsk(port, query("example.com.", "A"), 2_000))!);
      assert.equal(reply.rcode, "SERVFAIL");
      assert.equal(server.counters.forwardFailed, 1);
    }, { recursors: [`127.0.0.1:${dead.address().port}`], recursorTimeoutMs: 100 });
    await withServer(async ({ port }) => {
      const reply = decode((await udpAsk(port, query("example.com.", "A")))!);
      assert.equal(reply.rcode, "REFUSED", "no recursors: REFUSED");
      assert.equal(reply.flag_ra, false);
    });
  } finally {
    good.sock.close();
    dead.close();
  }
});

test("listen: a port in use is a clear error naming the port", async () => {
  await withServer(async ({ port }) => {
    const other = await startServer().then((s) => s.server);
    await assert.rejects(other.listen({ host: "127.0.0.1", port }), (err: unknown) => {
      assert.ok(err instanceof DnsListenError);
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}.*already in use.*-dns-port`));
      return true;
    });
    await other.close();
  });
});

test("parseRecursor: host, host:port, [v6]:port", () => {
  assert.deepEqual(parseRecursor("8.8.8.8"), { host: "8.8.8.8", port: 53 });
  assert.deepEqual(parseRecursor("8.8.8.8:5353"), { host: "8.8.8.8", port: 5353 });
  assert.deepEqual(parseRecursor("[::1]:54"), { host: "::1", port: 54 });
  assert.deepEqual(parseRecursor("::1"), { host: "::1", port: 53 });
  assert.equal(parseRecursor("host:notaport"), undefined);
});

test("answer cache: reused while the catalog index stays, rebuilt when it moves; IDs patched; orders still vary", async () => {
  await withServer(async ({ server, backend }) => {
    backend.index = 10;
    const orders = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const reply = decode((await server.handle(query("web.service.consul.", "A", { id: 1000 + i }), "udp"))!);
      assert.equal(reply.id, 1000 + i);
      assert.equal(reply.answers.length, 3);
      orders.add(reply.answers.map((a) => a.data).join(","));
    }
    assert.ok(server.counters.cacheHits >= 30, `cache hits ${server.counters.cacheHits}`);
    assert.ok(orders.size > 2, `orders vary (${orders.size})`);
    // The catalog changes: the next answer reflects it.
    backend.instances = backend.instances.slice(0, 1);
    backend.index = 11;
    const after = decode((await server.handle(query("web.service.consul.", "A"), "udp"))!);
    assert.deepEqual(after.answers.map((a) => a.data), ["10.1.0.1"]);
    // Index 0 (unknown) never reuses.
    backend.index = 0;
    const hits = server.counters.cacheHits;
    for (let i = 0; i < 3; i++) await server.handle(query("n1.node.consul.", "A"), "udp");
    assert.equal(server.counters.cacheHits, hits);
  });
});

test("TCP: a client pipelining hundreds of queries without reading is disconnected", async () => {
  await withServer(async ({ server, port }) => {
    const many = Buffer.concat(Array.from({ length: 300 }, (_, i) => frame(query("n1.node.consul.", "A", { id: i }))));
    const { closed } = await tcpExchange(port, [many], 300);
    assert.equal(closed, true);
    assert.equal(server.counters.tcpFramesRefused, 1);
    const ok = await tcpExchange(port, [frame(query("n1.node.consul.", "A", { id: 9 }))], 1);
    assert.equal(ok.replies[0]!.id, 9, "other clients are still served");
  });
});

test("mutated queries never throw, and every reply decodes", async () => {
  await withServer(async ({ server }) => {
    const bases = [
      query("web.service.consul.", "SRV", { edns: 1232 }),
      query("n1.node.consul.", "TXT"),
      query("_web._tcp.service.consul.", "SRV"),
      query("1.0.0.10.in-addr.arpa.", "PTR"),
      query("consul.", "ANY" as dnsPacket.RecordType),
    ];
    for (const seed of seeds(3)) {
      const rng = new Rng(seed);
      for (let i = 0; i < 400; i++) {
        const q = new Uint8Array(rng.pick(bases));
        const flips = rng.range(1, 4);
        for (let f = 0; f < flips; f++) q[rng.range(2, q.length - 1)] = rng.int(256);
        q[2] = q[2]! & 0x7f; // keep it a query
        const cut = rng.chance(0.2) ? q.subarray(0, rng.range(0, q.length)) : q;
        const reply = await server.handle(cut, rng.chance(0.5) ? "udp" : "tcp");
        if (reply) {
          assert.doesNotThrow(() => dnsPacket.decode(Buffer.from(reply)), `seed ${seed} case ${i}: ${Buffer.from(cut).toString("hex")}`);
        }
      }
    }
  });
});

test("recursors: a truncated UDP answer to a TCP client is fetched again over TCP", async () => {
  // UDP: TC and no records; TCP (same port): the full answer.
  const udp = createSocket("udp4");
  await new Promise<void>((r) => udp.bind(0, "127.0.0.1", () => r()));
  const rport = udp.address().port;
  const answerFor = (msg: Buffer, truncated: boolean) => {
    const q = dnsPacket.decode(msg);
    return dnsPacket.encode({
      type: "response",
      id: q.id,
      flags: truncated ? dnsPacket.TRUNCATED_RESPONSE : 0,
      questions: q.questions,
      answers: truncated ? [] : Array.from({ length: 40 }, (_, i) => ({ type: "A" as const, name: q.questions![0]!.name, ttl: 60, data: `192.0.2.${i + 1}` })),
    });
  };
  udp.on("message", (msg, rinfo) => udp.send(answerFor(msg, true), rinfo.port, rinfo.address));
  const tcpServer = createNetServer((sock) => {
    let buf = Buffer.alloc(0);
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) sock.end(frame(answerFor(buf.subarray(2, 2 + buf.readUInt16BE(0)), false)));
    });
    sock.on("error", () => {});
  });
  await new Promise<void>((r) => tcpServer.listen(rport, "127.0.0.1", () => r()));
  try {
    await withServer(async ({ port }) => {
      const viaTcp = await tcpExchange(port, [frame(query("big.example.", "A", { id: 12 }))], 1);
      assert.equal(viaTcp.replies[0]!.answers.length, 40);
      assert.equal(viaTcp.replies[0]!.flag_tc, false);
      const viaUdp = decode((await udpAsk(port, query("big.example.", "A", { id: 13 })))!);
      assert.equal(viaUdp.flag_tc, true, "UDP clients get the truncated answer and retry themselves");
    }, { recursors: [`127.0.0.1:${rport}`], recursorTimeoutMs: 1_000 });
  } finally {
    udp.close();
    await new Promise<void>((r) => tcpServer.close(() => r()));
  }
});

test("names are compressed by default (as Consul's); disable_compression writes them in full; both decode the same", async () => {
  const ask = async (options: { disableCompression?: boolean }) => {
    let bytes: Buffer | undefined;
    await withServer(async ({ port }) => {
      bytes = await udpAsk(port, query("web.service.consul.", "SRV", { edns: 4096 }));
    }, options);
    return bytes!;
  };
  const compressed = await ask({});
  const full = await ask({ disableCompression: true });
  const hasPointer = (b: Buffer) => b.subarray(12).some((x) => (x & 0xc0) === 0xc0);
  assert.ok(compressed.length < full.length * 0.8, `${compressed.length} vs ${full.length} bytes`);
  assert.equal(hasPointer(full), false, "no pointers when compression is off");
  const strip = (r: Reply) => ({ ...r, answers: r.answers.map((a) => a.name + JSON.stringify(a.data)).sort(), additionals: r.additionals.map((a) => a.name + JSON.stringify(a.data)).sort() });
  assert.deepEqual(strip(decode(compressed)), strip(decode(full)));
});
