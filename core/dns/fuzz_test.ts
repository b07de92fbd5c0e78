// Fuzz: DNS questions and catalog data. A dev server's catalog is filled
// with odd but accepted registrations (unicode and dotted names, long
// labels, addresses that are not IPs, huge meta); then questions for every
// name form (node, service, tag, RFC 2782, addr, reverse, query, apex) with
// mutated labels, every record type, odd classes, flags and EDNS sizes go
// through the real RPC backend, resolver and server. Every query must get a
// reply that decodes, echoes its ID, question and opcode, and fits the
// transport; never a throw. Over TCP, damaged framing must end in answers
// or a closed connection, never a hang. FUZZ_SEED=n replays one seed.
// (serve_node_test.ts already flips bytes of whole packets; this adds
// structure: names, types and what the catalog holds.)

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { test } from "node:test";
import * as dnsPacket from "dns-packet";
import { createLocalRpc } from "../rpc/local.ts";
import type { CatalogRegisterArgs } from "../rpc/methods.ts";
import { createDevServer } from "../server/dev.ts";
import { fuzzSeeds, hex, mutateBytes, mutateText, oddChars, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createRpcBackend } from "./backend_rpc.ts";
import { createDnsResolver } from "./driver.ts";
import { createDnsServer, type DnsServer } from "./serve_node.ts";
import { testConfig } from "./_fake_backend.ts";

const oddNames = ["web", "Web-1", "a.b", "x".repeat(63), "x".repeat(64), "y".repeat(200), "é", "☃-svc", "_sip", "under_score", "sp ace", "tab\there", "-lead", "trail-", "1234", "*", "\\", "\u0000nul"];
const oddAddresses = ["10.0.0.7", "::1", "fe80::1%eth0", "::ffff:10.0.0.8", "2001:db8::", "1.2.3.4.5", "256.1.1.1", "host.example.com", "host", "", "not an address", "\u00e9.example", "10.0.0.9:8080"];

function oddRegistration(rng: Rng, i: number): CatalogRegisterArgs {
  const name = () => (rng.chance(0.3) ? mutateText(rng, rng.pick(oddNames), { rounds: 1 }) : rng.pick(oddNames));
  const meta: Record<string, string> = {};
  for (let k = rng.int(4); k > 0; k--) meta[rng.pick(["rack", "k", "x".repeat(100), "é", "a=b", ""])] = rng.pick(["v", "", "x".repeat(rng.pick([10, 300, 3000])), "\"quoted\"", "\u0000", "é"]);
  return {
    node: rng.chance(0.8) ? `${name()}${i}` : name(),
    address: rng.pick(oddAddresses) || "10.0.0.1",
    nodeMeta: meta,
    taggedAddresses: rng.chance(0.3) ? { wan: rng.pick(oddAddresses) } : undefined,
    service: {
      service: name() || "svc",
      id: `i${i}`,
      tags: Array.from({ length: rng.int(4) }, name),
      address: rng.chance(0.5) ? rng.pick(oddAddresses) : "",
      port: rng.pick([0, 1, 80, 65535]),
      meta,
      weights: { passing: rng.pick([0, 1, 10]), warning: rng.pick([0, 1]) },
    },
    checks: rng.chance(0.5) ? [{ name: "c", checkId: `c${i}`, status: rng.pick(["passing", "warning", "critical"] as const), serviceId: `i${i}` }] : [],
  };
}

function question(rng: Rng, known: { nodes: string[]; services: string[]; tags: string[] }): string {
  const label = (s: string) => (rng.chance(0.15) ? mutateText(rng, s, { rounds: 1 }) : s);
  const node = () => label(rng.chance(0.3) ? "n1" : rng.pick(known.nodes));
  const svc = () => label(rng.chance(0.3) ? "web" : rng.pick(known.services));
  const dc = () => (rng.chance(0.3) ? `${rng.pick(["dc1", "DC1", "dc2", "", "x".repeat(70)])}.` : "");
  const domain = rng.chance(0.7) ? "consul." : rng.pick(["CONSUL.", "consul", "alt.test.", "example.com.", "."]);
  switch (rng.int(11)) {
    case 0: return `${node()}.node.${dc()}${domain}`;
    case 1: return `${svc()}.service.${dc()}${domain}`;
    case 2: return `${label(rng.pick(known.tags))}.${svc()}.service.${domain}`;
    case 3: return `_${svc()}._${rng.pick(["tcp", "udp", "TCP", "x"])}.service.${dc()}${domain}`;
    case 4: return `${rng.pick(["0a000007", "7f000001", "00000000000000000000000000000001", "zz", "0a00000", ""])}.addr.${dc()}${domain}`;
    case 5: return `${rng.int(256)}.${rng.int(256)}.0.10.in-addr.arpa.`;
    case 6: return `1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.${rng.pick(["0", "x", ""])}.ip6.arpa.`;
    case 7: return `${label(rng.pick(["q", "web-q", "nope", ""]))}.query.${dc()}${domain}`;
    case 8: return domain;
    case 9: return Array.from({ length: rng.range(1, 140) }, () => rng.pick(["a", "b", "node", "service", ""])).join(".");
    default: return `${rng.pick(oddChars)}${node()}.node.${domain}`;
  }
}

const types = ["A", "AAAA", "ANY", "SRV", "TXT", "PTR", "NS", "SOA", "CNAME", "MX", "AXFR", "CAA", "DS", "OPT"] as const;

interface Reply {
  id: number;
  type: string;
  opcode: string;
  rcode: string;
  flag_qr?: boolean;
  questions: Array<{ name: string; type: string }>;
}

function encodeQuery(rng: Rng, name: string): Buffer | undefined {
  const edns = rng.pick([undefined, undefined, 0, 511, 512, 1232, 4096, 65535]);
  try {
    return dnsPacket.encode({
      type: "query",
      id: rng.int(65536),
      flags: (rng.chance(0.7) ? dnsPacket.RECURSION_DESIRED : 0) | (rng.chance(0.1) ? dnsPacket.CHECKING_DISABLED : 0) | (rng.chance(0.1) ? dnsPacket.AUTHENTIC_DATA : 0),
      questions: [{ name, type: rng.pick(types) as dnsPacket.RecordType, class: rng.chance(0.85) ? "IN" : rng.pick(["ANY", "CH", "HS"]) as "IN" }],
      additionals: edns === undefined ? [] : [{ type: "OPT", name: ".", udpPayloadSize: edns, extendedRcode: 0, ednsVersion: rng.pick([0, 0, 1]), flags: 0, flag_do: rng.chance(0.2), options: [] } as dnsPacket.Answer],
    });
  } catch {
    return undefined; // dns-packet will not write it (a label over 63 bytes, ...): no client could send it either.
  }
}

async function world(seed: number): Promise<{ server: DnsServer; known: { nodes: string[]; services: string[]; tags: string[] }; stop(): Promise<void> }> {
  const rng = new Rng(seed);
  const dev = await createDevServer({ clock: new SimClock(), rng: rng.fork() });
  const known = { nodes: ["n1"], services: ["web"], tags: ["v1"] };
  await dev.server.handlers["Catalog.Register"]({ node: "n1", address: "10.0.0.7", service: { service: "web", tags: ["v1"], port: 80 } });
  for (let i = 0; i < 40; i++) {
    const reg = oddRegistration(rng, i);
    try {
      await dev.server.handlers["Catalog.Register"](reg);
      known.nodes.push(reg.node);
      known.services.push(reg.service!.service);
      known.tags.push(...(reg.service!.tags ?? []));
    } catch {
      // Refused registrations are fine: the point is what was accepted.
    }
  }
  await dev.server.handlers["PreparedQuery.Apply"]({
    op: "create",
    query: {
      id: "", name: "web-q", session: "", token: "", template: { type: "", regexp: "", removeEmptyTags: false }, dns: { ttl: "5s" },
      service: { service: "web", failover: { nearestN: 0, datacenters: [] }, ignoreCheckIds: [], onlyPassing: false, near: "", tags: [], nodeMeta: {}, serviceMeta: {}, connect: false },
    },
  });
  const rpc = createLocalRpc(dev.server);
  const resolver = createDnsResolver({
    backend: createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 10_000, selfServer: { node: "n1", address: "10.0.0.7", port: 8300 }, nodeName: "n1" }),
    config: testConfig({ enableTruncate: rng.chance(0.5), udpAnswerLimit: rng.pick([1, 3, 100]), aRecordLimit: rng.pick([0, 1, 2]), altDomain: rng.chance(0.5) ? "alt.test." : "" }),
    rng: rng.fork(),
    wallNow: () => 1_700_000_000_000,
  });
  const server = createDnsServer({ resolver, rng: rng.fork(), tcpIdleTimeoutMs: 100 });
  return { server, known, stop: () => dev.stop() };
}

test("dns fuzz: questions of every form about an odd catalog get a reply that decodes and echoes the query, never a throw", async () => {
  for (const seed of fuzzSeeds(3)) {
    const rng = new Rng(seed);
    const w = await world(seed);
    try {
      for (let i = 0; i < 300; i++) {
        const name = question(rng, w.known);
        let query = encodeQuery(rng, name);
        if (!query) continue;
        if (rng.chance(0.1)) {
          const damaged = Buffer.from(mutateBytes(rng, query, { only: ["flip-bit", "set-byte", "truncate"] }));
          damaged[2]! &= 0x7f; // still a query, so it reaches the decoder
          query = damaged;
        }
        const transport = rng.chance(0.5) ? "udp" : "tcp";
        const what = `${replayHint(seed, i)}: ${transport} ${JSON.stringify(name)} ${hex(query)}`;
        let reply: Uint8Array | undefined;
        try {
          reply = await w.server.handle(query, transport);
        } catch (err) {
          assert.fail(`${what}: handle threw ${String(err)}`);
        }
        if (!reply) {
          assert.ok(query.length < 12 || (query[2]! & 0x80) !== 0, `${what}: no reply to a readable query`);
          continue;
        }
        let r: Reply;
        try {
          r = dnsPacket.decode(Buffer.from(reply)) as unknown as Reply;
        } catch (err) {
          assert.fail(`${what}: the reply does not decode (${String(err)}): ${hex(reply)}`);
        }
        assert.equal(r.id, query.readUInt16BE(0), `${what}: reply ID`);
        assert.equal(reply[2]! & 0x80, 0x80, `${what}: QR not set`);
        assert.equal((reply[2]! >> 3) & 0x0f, (query[2]! >> 3) & 0x0f, `${what}: opcode not echoed`);
        assert.ok(["NOERROR", "NXDOMAIN", "SERVFAIL", "REFUSED", "FORMERR", "NOTIMP"].includes(r.rcode), `${what}: rcode ${r.rcode}`);
        let sent: dnsPacket.DecodedPacket | undefined;
        try {
          sent = dnsPacket.decode(query);
        } catch {
          // Damaged past reading: the header checks above are all there is.
        }
        if (sent && r.questions.length > 0) {
          const asked = (sent.questions ?? [])[0];
          assert.equal(r.questions.length, 1, `${what}: questions`);
          if (asked) assert.equal(r.questions[0]!.name.toLowerCase(), asked.name.toLowerCase(), `${what}: question not echoed`);
        }
        if (sent && transport === "udp") {
          const edns = sent.additionals?.find((a) => a.type === "OPT") as dnsPacket.OptAnswer | undefined;
          const limit = Math.max(512, edns?.udpPayloadSize ?? 512);
          assert.ok(reply.length <= limit, `${what}: a ${reply.length}-byte UDP reply over the ${limit}-byte limit`);
        }
      }
      assert.equal(w.server.counters.encodeFailed, 0, `seed ${seed}: answers that failed to encode (replay: FUZZ_SEED=${seed})`);
    } finally {
      await w.stop();
    }
  }
});

test("dns fuzz: damaged TCP framing ends in answers or a closed connection, never a hang", { timeout: 30_000 }, async () => {
  const w = await world(1);
  const { port } = await w.server.listen({ host: "127.0.0.1", port: 0 });
  try {
    for (const seed of fuzzSeeds(2)) {
      const rng = new Rng(seed);
      for (let i = 0; i < 10; i++) {
        const frames: Uint8Array[] = [];
        for (let n = rng.range(1, 4); n > 0; n--) {
          const q = encodeQuery(rng, question(rng, w.known));
          if (!q || q.length > 0xffff) continue;
          const f = Buffer.alloc(2 + q.length);
          f.writeUInt16BE(q.length, 0);
          q.copy(f, 2);
          frames.push(f);
        }
        const stream = mutateBytes(rng, Buffer.concat(frames), { only: ["flip-bit", "truncate", "huge-length", "insert-random", "duplicate-range"] });
        const what = `${replayHint(seed, i)}: ${hex(stream)}`;
        const replies = await new Promise<Buffer[]>((resolve, reject) => {
          const sock = connect(port, "127.0.0.1");
          let buf = Buffer.alloc(0);
          const got: Buffer[] = [];
          const timer = setTimeout(() => {
            sock.destroy();
            reject(new Error(`${what}: the connection is still open after 3 s (idle timeout 100 ms)`));
          }, 3_000);
          sock.on("data", (d: Buffer) => {
            buf = Buffer.concat([buf, d]);
            while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
              got.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
              buf = buf.subarray(2 + buf.readUInt16BE(0));
            }
          });
          sock.on("error", () => {});
          sock.on("close", () => {
            clearTimeout(timer);
            resolve(got);
          });
          sock.on("connect", () => sock.write(stream));
        });
        for (const reply of replies) assert.doesNotThrow(() => dnsPacket.decode(reply), `${what}: a reply that does not decode: ${hex(reply)}`);
      }
    }
    // Other clients are still served.
    const q = encodeQuery(new Rng(5), "n1.node.consul.")!;
    const reply = await w.server.handle(q, "udp");
    assert.ok(reply);
  } finally {
    await w.server.close();
    await w.stop();
  }
});
