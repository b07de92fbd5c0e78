// End-to-end: dig (Debian dnsutils) against the DNS interface of a real
// `dist/cairn agent -dev`. Services are registered through the agent API
// (/v1/agent/service/register) and reach the catalog by anti-entropy.
// Covers A, AAAA, SRV, TXT, tag and RFC 2782 names, health filtering
// following a TTL check, truncation with TCP retry, EDNS0, SOA/NS, NXDOMAIN,
// PTR, the alt domain, and recursor forwarding to a small resolver on
// 127.0.0.1 (REFUSED without recursors).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as dnsPacket from "dns-packet";
import { freePort, run, startDevAgent, tempDir, waitFor, type DevAgent } from "./harness.ts";

const digBin = "/usr/bin/dig";

interface DigResult {
  status: string;
  flags: string[];
  answer: string[][];
  authority: string[][];
  additional: string[][];
  ednsUdp?: number;
  server: string;
  raw: string;
}

async function dig(port: number, args: string[]): Promise<DigResult> {
  const r = await run(digBin, ["@127.0.0.1", "-p", String(port), "+time=2", "+tries=1", ...args], { timeoutMs: 15_000 });
  const raw = r.stdout + r.stderr;
  const status = /status: (\w+)/.exec(raw)?.[1] ?? "";
  const flags = (/;; flags: ([^;]*);/.exec(raw)?.[1] ?? "").trim().split(/\s+/).filter(Boolean);
  const section = (title: string): string[][] => {
    const at = raw.indexOf(`;; ${title} SECTION:`);
    if (at < 0) return [];
    const out: string[][] = [];
    for (const line of raw.slice(at).split("\n").slice(1)) {
      if (line.trim() === "") break;
      out.push(line.trim().split(/\s+/));
    }
    return out;
  };
  const edns = /; EDNS: version: \d+, flags:[^;]*; udp: (\d+)/.exec(raw);
  return {
    status,
    flags,
    answer: section("ANSWER"),
    authority: section("AUTHORITY"),
    additional: section("ADDITIONAL"),
    ednsUdp: edns ? Number(edns[1]) : undefined,
    server: /;; SERVER: .*\((\w+)\)/.exec(raw)?.[1] ?? "",
    raw,
  };
}

/** The data fields (after name, ttl, class, type) of records of one type. */
function data(records: string[][], type: string): string[] {
  return records.filter((r) => r[3] === type).map((r) => r.slice(4).join(" "));
}

async function put(agent: DevAgent, path: string, body?: unknown): Promise<void> {
  const r = await fetch(`${agent.http}${path}`, { method: "PUT", body: body === undefined ? undefined : JSON.stringify(body) });
  assert.ok(r.ok, `PUT ${path}: ${r.status} ${await r.text()}`);
}

/** A tiny resolver: every A question gets 192.0.2.53. */
async function startFakeResolver(): Promise<{ port: number; close(): void; seen: string[] }> {
  const sock: UdpSocket = createSocket("udp4");
  const seen: string[] = [];
  sock.on("message", (msg, rinfo) => {
    try {
      const q = dnsPacket.decode(msg);
      const name = q.questions?.[0]?.name ?? "";
      seen.push(name);
      const reply = dnsPacket.encode({
        type: "response",
        id: q.id,
        flags: dnsPacket.RECURSION_AVAILABLE | dnsPacket.RECURSION_DESIRED,
        questions: q.questions,
        answers: [{ type: "A", name, ttl: 30, data: "192.0.2.53" }],
      });
      sock.send(reply, rinfo.port, rinfo.address);
    } catch {
      // not a query: ignore
    }
  });
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  return { port: sock.address().port, seen, close: () => sock.close() };
}

describe("DNS interface of dist/cairn agent -dev, with dig", { skip: !existsSync(digBin) && "dig is not installed" }, () => {
  let agent: DevAgent;
  let port: number;
  let resolver: Awaited<ReturnType<typeof startFakeResolver>>;
  const dir = tempDir("cairn-e2e-dns-");

  before(async () => {
    resolver = await startFakeResolver();
    const config = join(dir.path, "dns.json");
    writeFileSync(config, JSON.stringify({
      alt_domain: "cairn",
      dns_config: { enable_truncate: true, node_ttl: "10s", service_ttl: { "*": "5s", "web*": "7s" } },
    }));
    agent = await startDevAgent([
      "-node=e2e-node",
      "-node-meta=rack:r42",
      `-recursor=127.0.0.1:${resolver.port}`,
      `-config-file=${config}`,
    ]);
    port = agent.dnsPort;
    for (let i = 1; i <= 8; i++) {
      await put(agent, "/v1/agent/service/register", {
        ID: `web-${i}`,
        Name: "web",
        Address: `10.0.0.${i}`,
        Port: 8000 + i,
        Tags: i <= 2 ? ["v1"] : ["v2"],
      });
    }
    await put(agent, "/v1/agent/service/register", { Name: "db", Port: 5432 });
    await put(agent, "/v1/agent/service/register", { Name: "six", Address: "2001:db8::7", Port: 80 });
    await put(agent, "/v1/agent/service/register", { Name: "api", Port: 9000, Check: { TTL: "60s" } });
    await waitFor(async () => (await dig(port, ["web.service.consul", "A", "+tcp"])).answer.length === 8, {
      timeoutMs: 15_000,
      what: "the 8 web instances to reach the catalog",
    });
  });

  after(async () => {
    await agent?.stop();
    resolver?.close();
    dir.remove();
  });

  test("SOA and NS at the domain; NXDOMAIN with the SOA in authority", async () => {
    const soa = await dig(port, ["consul.", "SOA"]);
    assert.equal(soa.status, "NOERROR", soa.raw);
    assert.ok(soa.flags.includes("aa"));
    const fields = data(soa.answer, "SOA")[0]!.split(" ");
    assert.deepEqual([fields[0], fields[1], ...fields.slice(3)], ["ns.consul.", "hostmaster.consul.", "3600", "600", "86400", "0"]);
    assert.deepEqual(data(soa.authority, "NS"), ["e2e-node.node.dc1.consul."]);
    const ns = await dig(port, ["consul.", "NS"]);
    assert.deepEqual(data(ns.answer, "NS"), ["e2e-node.node.dc1.consul."]);
    assert.deepEqual(data(ns.additional, "A"), ["127.0.0.1"]);
    const nx = await dig(port, ["nope.service.consul", "A"]);
    assert.equal(nx.status, "NXDOMAIN", nx.raw);
    assert.equal(nx.authority[0]?.[3], "SOA");
    const nxNode = await dig(port, ["nope.node.consul", "A"]);
    assert.equal(nxNode.status, "NXDOMAIN");
  });

  test("node: A with node_ttl, TXT from node meta, case-insensitive, alt domain", async () => {
    const a = await dig(port, ["E2E-Node.node.consul", "A"]);
    assert.deepEqual(data(a.answer, "A"), ["127.0.0.1"], a.raw);
    assert.equal(a.answer[0]![1], "10");
    const txt = await dig(port, ["e2e-node.node.dc1.consul", "TXT"]);
    assert.deepEqual(data(txt.answer, "TXT"), ['"rack=r42"'], txt.raw);
    const alt = await dig(port, ["e2e-node.node.cairn", "A"]);
    assert.deepEqual(data(alt.answer, "A"), ["127.0.0.1"], alt.raw);
  });

  test("service: A, AAAA, SRV with targets and glue, tags and RFC 2782, service_ttl wildcards", async () => {
    const a = await dig(port, ["db.service.consul", "A"]);
    assert.deepEqual(data(a.answer, "A"), ["127.0.0.1"], a.raw);
    assert.equal(a.answer[0]![1], "5", "service_ttl *");
    const srv = await dig(port, ["db.service.consul", "SRV"]);
    assert.deepEqual(data(srv.answer, "SRV"), ["1 1 5432 e2e-node.node.dc1.consul."], srv.raw);
    assert.deepEqual(srv.additional.filter((r) => r[3] === "A").map((r) => [r[0], r[4]]), [["e2e-node.node.dc1.consul.", "127.0.0.1"]]);
    const aaaa = await dig(port, ["six.service.consul", "AAAA"]);
    assert.deepEqual(data(aaaa.answer, "AAAA"), ["2001:db8::7"], aaaa.raw);
    const tagged = await dig(port, ["v1.web.service.consul", "A", "+tcp"]);
    assert.deepEqual(data(tagged.answer, "A").sort(), ["10.0.0.1", "10.0.0.2"], tagged.raw);
    assert.equal(tagged.answer[0]![1], "7", "service_ttl web* beats *");
    const rfc = await dig(port, ["_web._v1.service.consul", "SRV", "+tcp"]);
    const srvData = data(rfc.answer, "SRV").sort();
    assert.deepEqual(srvData, ["1 1 8001 0a000001.addr.dc1.consul.", "1 1 8002 0a000002.addr.dc1.consul."], rfc.raw);
    assert.deepEqual(rfc.additional.filter((r) => r[0] === "0a000001.addr.dc1.consul.").map((r) => r[4]), ["10.0.0.1"]);
    const rfcTcp = await dig(port, ["_web._tcp.service.dc1.consul", "SRV", "+tcp"]);
    assert.equal(rfcTcp.answer.length, 8);
    const addr = await dig(port, ["0a000003.addr.dc1.consul", "A"]);
    assert.deepEqual(data(addr.answer, "A"), ["10.0.0.3"]);
  });

  test("health: an instance whose TTL check is critical is left out until the check passes, then again when it fails", async () => {
    const before = await dig(port, ["api.service.consul", "A"]);
    assert.equal(before.status, "NXDOMAIN", `a new TTL check starts critical:\n${before.raw}`);
    await put(agent, "/v1/agent/check/pass/service:api");
    await waitFor(async () => (await dig(port, ["api.service.consul", "A"])).status === "NOERROR", { what: "api to pass" });
    assert.deepEqual(data((await dig(port, ["api.service.consul", "A"])).answer, "A"), ["127.0.0.1"]);
    await put(agent, "/v1/agent/check/fail/service:api");
    await waitFor(async () => (await dig(port, ["api.service.consul", "A"])).status === "NXDOMAIN", { what: "api to fail" });
  });

  test("truncation: UDP without EDNS0 gets 3 records and TC; dig retries over TCP and gets all; EDNS0 fits all", async () => {
    const udp = await dig(port, ["web.service.consul", "A", "+noedns", "+ignore"]);
    assert.equal(udp.answer.length, 3, udp.raw);
    assert.ok(udp.flags.includes("tc"), `TC set:\n${udp.raw}`);
    const retried = await dig(port, ["web.service.consul", "A", "+noedns"]);
    assert.match(retried.raw, /Truncated, retrying in TCP mode/);
    assert.equal(retried.server, "TCP");
    assert.equal(retried.answer.length, 8);
    const edns = await dig(port, ["web.service.consul", "SRV", "+bufsize=4096"]);
    assert.equal(edns.ednsUdp, 4096, "OPT echoed with the client's size");
    assert.equal(edns.answer.length, 8, edns.raw);
    assert.equal(edns.flags.includes("tc"), false);
    const small = await dig(port, ["web.service.consul", "SRV", "+bufsize=512", "+ignore"]);
    assert.ok(small.answer.length < 8 && small.answer.length >= 1, small.raw);
    assert.ok(small.flags.includes("tc"));
  });

  test("PTR for the node's address", async () => {
    const ptr = await dig(port, ["-x", "127.0.0.1"]);
    assert.deepEqual(data(ptr.answer, "PTR"), ["e2e-node.node.dc1.consul."], ptr.raw);
  });

  test("names outside the domain go to the recursor; unknown types under the domain are empty with SOA", async () => {
    const ext = await dig(port, ["www.example.test", "A"]);
    assert.equal(ext.status, "NOERROR", ext.raw);
    assert.deepEqual(data(ext.answer, "A"), ["192.0.2.53"]);
    assert.ok(resolver.seen.includes("www.example.test"));
    const mx = await dig(port, ["db.service.consul", "MX"]);
    assert.equal(mx.status, "NOERROR");
    assert.equal(mx.answer.length, 0);
    assert.equal(mx.authority[0]?.[3], "SOA");
    const odd = await dig(port, ["db.service.consul", "TYPE65280"]);
    assert.equal(odd.status, "NOERROR", odd.raw);
    assert.equal(odd.authority[0]?.[3], "SOA");
  });

  test("without recursors, names outside the domain are REFUSED", async () => {
    const plain = await startDevAgent(["-node=plain"]);
    try {
      const r = await dig(plain.dnsPort, ["www.example.test", "A"]);
      assert.equal(r.status, "REFUSED", r.raw);
      assert.equal(r.flags.includes("ra"), false);
    } finally {
      await plain.stop();
    }
  });
});

describe("DNS under Deno 2", { skip: !existsSync(digBin) && "dig is not installed" }, () => {
  test("the same sources serve DNS over UDP and TCP", async () => {
    const agent = await startDevAgent(["-node=deno-node"], { runtime: "deno" });
    try {
      const port = agent.dnsPort;
      const soa = await dig(port, ["consul.", "SOA"]);
      assert.equal(soa.status, "NOERROR", soa.raw);
      assert.equal(data(soa.answer, "SOA").length, 1);
      const node = await dig(port, ["deno-node.node.consul", "A", "+tcp"]);
      assert.equal(node.server, "TCP");
      assert.deepEqual(data(node.answer, "A"), ["127.0.0.1"], node.raw);
    } finally {
      await agent.stop();
    }
  });
});

describe("DNS port in use", () => {
  test("the agent exits 1 naming the DNS port", async () => {
    const dnsPort = await freePort();
    const holder = createSocket("udp4");
    await new Promise<void>((r) => holder.bind(dnsPort, "127.0.0.1", () => r()));
    try {
      const { proc } = await startDevAgent([], { use: { dns: dnsPort }, ready: false });
      const timer = setTimeout(() => void proc.kill(), 30_000);
      const code = await proc.exited;
      clearTimeout(timer);
      assert.equal(code, 1, proc.output());
      assert.match(proc.output(), new RegExp(`Cannot listen for DNS on 127\\.0\\.0\\.1:${dnsPort}.*already in use`));
    } finally {
      holder.close();
    }
  });
});
