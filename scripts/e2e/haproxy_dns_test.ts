// End-to-end: HAProxy (Debian `haproxy`) discovers backends through the DNS
// interface of a real `dist/cairn agent -dev`, the way most people consume
// Consul's DNS: `server-template … _web._tcp.service.consul resolvers …`
// (SRV records, addresses from the additional section). Three instances of a
// service share one host (127.0.0.1, different ports); every one must come
// UP, and a deregistered one must leave. HAProxy ties each additional record
// to one SRV record by name, so the answer needs one address record per SRV
// record, duplicates included (Consul agent/dns.go addServiceSRVRecordsToMessage).
// Three shapes: instances with a service address (`<hex>.addr.dc1.consul.`
// targets), instances that use the node's address (`<node>.node.dc1.consul.`),
// and instances whose service address is a hostname (the target is the
// hostname; cairn resolves it at its recursor, here a small fake one, and
// puts the records in the additional section as Consul's resolveCNAME does).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createSocket } from "node:dgram";
import { existsSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import * as dnsPacket from "dns-packet";
import { freePort, run, startDevAgent, startProcess, tempDir, waitFor, type DevAgent, type Proc } from "./harness.ts";

/** How each service is registered: with an IP service address, none (the node's), or a hostname. */
const services = {
  web: { Address: "127.0.0.1" },
  api: {},
  ext: { Address: "backends.example.test" },
} as const;
type Service = keyof typeof services;
const serviceNames = Object.keys(services) as Service[];

/** A recursor for cairn: every A question gets 127.0.0.1. */
async function startFakeRecursor(): Promise<{ port: number; close(): void; seen: string[] }> {
  const sock = createSocket("udp4");
  const seen: string[] = [];
  sock.on("message", (msg, rinfo) => {
    try {
      const q = dnsPacket.decode(msg);
      const question = q.questions?.[0];
      if (!question) return;
      seen.push(`${question.type} ${question.name}`);
      sock.send(dnsPacket.encode({
        type: "response",
        id: q.id,
        flags: dnsPacket.RECURSION_AVAILABLE | dnsPacket.RECURSION_DESIRED,
        questions: q.questions,
        answers: question.type === "A" ? [{ type: "A", name: question.name, ttl: 30, data: "127.0.0.1" }] : [],
      }), rinfo.port, rinfo.address);
    } catch {
      // not a query
    }
  });
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  return { port: sock.address().port, seen, close: () => sock.close() };
}

function findHaproxy(): string | undefined {
  for (const p of ["/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"]) if (existsSync(p)) return p;
  const which = spawnSync("sh", ["-c", "command -v haproxy"], { encoding: "utf8" });
  return which.status === 0 && which.stdout.trim() ? which.stdout.trim() : undefined;
}

const haproxyBin = findHaproxy();

/** One SRV question over UDP with EDNS0 (as HAProxy asks): the answer's SRV and additional records. */
async function askSrv(port: number, name: string): Promise<{ srv: Array<{ port: number; target: string }>; additionals: Array<{ name: string; type: string; data: unknown }> }> {
  const sock = createSocket("udp4");
  try {
    const id = 1 + Math.floor(Math.random() * 65000);
    const query = dnsPacket.encode({
      type: "query",
      id,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ type: "SRV", name }],
      additionals: [{ type: "OPT", name: ".", udpPayloadSize: 8192, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as dnsPacket.Answer],
    });
    const reply = await new Promise<Buffer>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`no DNS answer for ${name}`)), 2_000);
      sock.on("message", (msg) => {
        clearTimeout(timer);
        ok(msg);
      });
      sock.send(query, port, "127.0.0.1");
    });
    const decoded = dnsPacket.decode(reply);
    const srv = (decoded.answers ?? []).flatMap((r) => r.type === "SRV" ? [{ port: r.data.port, target: r.data.target }] : []);
    const additionals = (decoded.additionals ?? []).filter((r) => r.type !== "OPT").map((r) => ({ name: r.name, type: r.type, data: "data" in r ? r.data : undefined }));
    return { srv, additionals };
  } finally {
    sock.close();
  }
}

/** A tiny HTTP backend that answers 200 with its own port. */
async function startBackend(port: number): Promise<Server> {
  const srv = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`backend ${port}\n`);
  });
  await new Promise<void>((ok, fail) => {
    srv.once("error", fail);
    srv.listen(port, "127.0.0.1", () => ok());
  });
  return srv;
}

interface ServerRow {
  name: string;
  status: string;
  addr: string;
}

/** The servers of one backend from HAProxy's stats CSV. */
async function haproxyServers(statsPort: number, backend: string): Promise<ServerRow[]> {
  const text = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const header = lines[0]!.replace(/^# /, "").split(",");
  const col = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`stats CSV has no "${name}" column: ${lines[0]}`);
    return i;
  };
  const [px, sv, status, addr] = [col("pxname"), col("svname"), col("status"), col("addr")];
  return lines.slice(1).map((l) => l.split(",")).filter((f) => f[px] === backend && f[sv] !== "BACKEND")
    .map((f) => ({ name: f[sv]!, status: f[status]!, addr: f[addr] ?? "" }));
}

function upPorts(rows: ServerRow[]): number[] {
  return rows.filter((r) => r.status === "UP").map((r) => Number(r.addr.split(":").pop())).sort((a, b) => a - b);
}

function table(rows: ServerRow[]): string {
  return rows.map((r) => `${r.name} ${r.status} ${r.addr || "-"}`).join("\n");
}

async function put(agent: DevAgent, path: string, body?: unknown): Promise<void> {
  const r = await fetch(`${agent.http}${path}`, { method: "PUT", body: body === undefined ? undefined : JSON.stringify(body) });
  assert.ok(r.ok, `PUT ${path}: ${r.status} ${await r.text()}`);
}

describe("HAProxy server-template over cairn's SRV answers", { skip: !haproxyBin && "haproxy is not installed (Debian package haproxy)" }, () => {
  const dir = tempDir("cairn-e2e-haproxy-");
  let agent: DevAgent;
  let dnsPort: number;
  let statsPort: number;
  let frontendPort: number;
  let haproxy: Proc;
  let recursor: Awaited<ReturnType<typeof startFakeRecursor>>;
  const backends: Server[] = [];
  const ports: Record<Service, number[]> = { web: [], api: [], ext: [] };

  const dump = async (): Promise<string> => {
    const parts: string[] = [];
    for (const svc of serviceNames) {
      try {
        const a = await askSrv(dnsPort, `_${svc}._tcp.service.consul.`);
        parts.push(`--- ${svc} SRV ---\n${a.srv.map((s) => `${s.port} ${s.target}`).join("\n")}\n--- additional ---\n${a.additionals.map((r) => `${r.name} ${r.type} ${JSON.stringify(r.data)}`).join("\n")}`);
      } catch (err) {
        parts.push(`--- ${svc} SRV: ${String(err)}`);
      }
      try {
        parts.push(`--- haproxy ${svc} ---\n${table(await haproxyServers(statsPort, svc))}`);
      } catch (err) {
        parts.push(`--- haproxy ${svc}: ${String(err)}`);
      }
    }
    parts.push(`--- haproxy output ---\n${haproxy?.output() ?? ""}`);
    return parts.join("\n");
  };

  before(async () => {
    for (const svc of serviceNames) {
      for (let i = 0; i < 3; i++) {
        const p = await freePort();
        ports[svc].push(p);
        backends.push(await startBackend(p));
      }
      ports[svc].sort((a, b) => a - b);
    }
    recursor = await startFakeRecursor();
    agent = await startDevAgent(["-node=haproxy-host", `-recursor=127.0.0.1:${recursor.port}`]);
    dnsPort = agent.dnsPort;
    for (const svc of serviceNames) {
      for (const [i, p] of ports[svc].entries()) {
        await put(agent, "/v1/agent/service/register", {
          ID: `${svc}-${i + 1}`,
          Name: svc,
          ...services[svc],
          Port: p,
          Check: { HTTP: `http://127.0.0.1:${p}/`, Interval: "1s" },
        });
      }
    }
    await waitFor(async () => {
      for (const svc of serviceNames) if ((await askSrv(dnsPort, `_${svc}._tcp.service.consul.`)).srv.length !== 3) return false;
      return true;
    }, { timeoutMs: 20_000, what: `three passing instances of ${serviceNames.join(", ")} in DNS` });

    statsPort = await freePort();
    frontendPort = await freePort();
    const config = join(dir.path, "haproxy.cfg");
    writeFileSync(config, [
      "global",
      "  log stderr format raw local0 info",
      "defaults",
      "  mode http",
      "  log global",
      "  timeout connect 1s",
      "  timeout client 5s",
      "  timeout server 5s",
      "resolvers consul",
      `  nameserver cairn 127.0.0.1:${dnsPort}`,
      "  accepted_payload_size 8192",
      "  resolve_retries 3",
      "  timeout resolve 500ms",
      "  timeout retry 500ms",
      "  hold valid 1s",
      "listen stats",
      `  bind 127.0.0.1:${statsPort}`,
      "  no log",
      "  stats enable",
      "  stats uri /stats",
      "  stats show-legends", // the addr column
      "frontend fe",
      `  bind 127.0.0.1:${frontendPort}`,
      "  default_backend web",
      ...serviceNames.flatMap((svc) => [
        `backend ${svc}`,
        "  balance roundrobin",
        `  server-template ${svc} 5 _${svc}._tcp.service.consul resolvers consul resolve-prefer ipv4 check inter 300ms`,
      ]),
      "",
    ].join("\n"));
    const check = await run(haproxyBin!, ["-c", "-f", config], { timeoutMs: 15_000 });
    assert.equal(check.code, 0, `haproxy -c rejected the configuration:\n${check.stdout}${check.stderr}`);
    haproxy = startProcess(haproxyBin!, ["-db", "-f", config]);
    await waitFor(async () => (await haproxyServers(statsPort, "web")).length === 5, {
      timeoutMs: 15_000,
      what: "haproxy's stats page",
    }).catch(async (err) => {
      throw new Error(`${String(err)}\n${await dump()}`);
    });
  });

  after(async () => {
    await haproxy?.kill("SIGKILL");
    await agent?.stop();
    recursor?.close();
    for (const b of backends) b.close();
    dir.remove();
  });

  test("every same-host instance comes UP: one address record per SRV record", async () => {
    for (const svc of serviceNames) {
      const want = ports[svc];
      await waitFor(async () => {
        const up = upPorts(await haproxyServers(statsPort, svc));
        return up.length === want.length && up.every((p, i) => p === want[i]);
      }, { timeoutMs: 20_000, what: `haproxy to bring up all three ${svc} servers (ports ${want.join(", ")})` })
        .catch(async (err) => {
          throw new Error(`${String(err)}\n${await dump()}`);
        });
      const rows = await haproxyServers(statsPort, svc);
      assert.ok(rows.filter((r) => r.status === "UP").every((r) => r.addr.startsWith("127.0.0.1:")), table(rows));
      assert.equal(rows.filter((r) => r.status !== "UP").length, 2, `the two spare template slots stay down:\n${table(rows)}`);
    }
    // The hostname was resolved by cairn (its recursor), once per SRV record.
    const ext = await askSrv(dnsPort, "_ext._tcp.service.consul.");
    assert.deepEqual(ext.srv.map((r) => r.target), ["backends.example.test", "backends.example.test", "backends.example.test"]);
    assert.deepEqual(ext.additionals.map((r) => `${r.name} ${r.type} ${String(r.data)}`), [0, 1, 2].map(() => "backends.example.test A 127.0.0.1"));
    // Requests through HAProxy reach every web backend (round robin).
    const answered = new Set<string>();
    for (let i = 0; i < 9; i++) answered.add((await (await fetch(`http://127.0.0.1:${frontendPort}/`)).text()).trim());
    assert.deepEqual([...answered].sort(), ports.web.map((p) => `backend ${p}`).sort());
  });

  test("a deregistered instance leaves HAProxy within a bounded time", async () => {
    const gone = ports.web[1]!;
    const started = Date.now();
    await put(agent, "/v1/agent/service/deregister/web-2");
    const boundMs = 15_000;
    await waitFor(async () => {
      const up = upPorts(await haproxyServers(statsPort, "web"));
      return up.length === 2 && !up.includes(gone);
    }, { timeoutMs: boundMs, what: `haproxy to drop the web server on port ${gone}` })
      .catch(async (err) => {
        throw new Error(`${String(err)}\n${await dump()}`);
      });
    const rows = await haproxyServers(statsPort, "web");
    assert.ok(!rows.some((r) => r.status === "UP" && r.addr.endsWith(`:${gone}`)), table(rows));
    assert.deepEqual(upPorts(rows), ports.web.filter((p) => p !== gone));
    assert.ok(Date.now() - started < boundMs);
    // The other services are untouched.
    assert.deepEqual(upPorts(await haproxyServers(statsPort, "api")), ports.api);
    assert.deepEqual(upPorts(await haproxyServers(statsPort, "ext")), ports.ext);
  });
});
