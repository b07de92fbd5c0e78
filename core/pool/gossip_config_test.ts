// The agent keys that shape its gossip pools: encrypt_verify_incoming and
// encrypt_verify_outgoing (rolling encryption onto a live pool),
// disable_keyring_file, serf_lan bind address and allowed CIDRs,
// advertise_reconnect_timeout. Pools run in one process on
// loopback with -dev timings.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { systemClock } from "../clock/mod.ts";
import { buildConfig } from "../config/mod.ts";
import type { AgentConfig } from "../config/types.ts";
import { CaptureSink, createLogger, nullLogger } from "../log/mod.ts";
import { freePort } from "../testing/free_port_node.ts";
import { until } from "../testing/until.ts";
import { consulTags, SerfPool, startGossip, type AgentGossip, type GossipPool } from "./mod.ts";
import { allowedCidrs } from "./start.ts";
import { reconnectTimeoutOverride } from "./tags.ts";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "cairn-gossip-config-"));
  dirs.push(d);
  return d;
}

function config(name: string, extra: Partial<AgentConfig> = {}): AgentConfig {
  const base = buildConfig({ dev: true, sources: [], flags: { nodeName: name, ports: { http: -1, dns: -1, serfLan: 0, serfWan: 0, server: 8300, https: -1 } } });
  return { ...base, server: false, bootstrap: false, ...extra };
}

/** Real-time waits on real sockets: 10 s. */
const tenSeconds = { timeoutMs: 10_000 };

const alive = (p: GossipPool) => p.members().filter((m) => m.status === "alive").map((m) => m.name).sort();

test("encrypt_verify_incoming/outgoing: a plaintext pool is moved onto a key agent by agent, and stays whole", async () => {
  const key = Buffer.alloc(32, 5).toString("base64");
  const names = ["ra", "rb", "rc"];
  const ports = new Map<string, number>();
  for (const n of names) ports.set(n, await freePort());
  const running = new Map<string, AgentGossip>();
  const start = async (name: string, extra: Partial<AgentConfig>) => {
    const port = ports.get(name)!;
    const g = await startGossip(config(name, { bindAddr: "127.0.0.1", ports: { http: -1, dns: -1, serfLan: port, serfWan: 0, server: 8300, https: -1 }, ...extra }), {
      logger: nullLogger(),
      clock: systemClock,
      nodeId: `00000000-0000-4000-8000-0000000000${names.indexOf(name)}${names.indexOf(name)}`,
    });
    running.set(name, g);
    const others = names.filter((n) => n !== name && running.has(n)).map((n) => `127.0.0.1:${ports.get(n)}`);
    if (others.length) {
      const r = await g.lan.join(others);
      assert.ok(r.joined > 0, `${name} rejoins ${others.join(", ")}: ${r.errors.join("; ")}`);
    }
  };
  const whole = (what: string) => until(() => [...running.values()].every((g) => alive(g.lan).join(",") === names.join(",")), what, tenSeconds);
  try {
    for (const n of names) await start(n, {});
    await whole("the plaintext pool");
    const phases: Array<[string, Partial<AgentConfig>]> = [
      ["the key, verifying neither way", { encrypt: key, encryptVerifyIncoming: false, encryptVerifyOutgoing: false }],
      ["verify_outgoing", { encrypt: key, encryptVerifyIncoming: false, encryptVerifyOutgoing: true }],
      ["verify_incoming", { encrypt: key, encryptVerifyIncoming: true, encryptVerifyOutgoing: true }],
    ];
    for (const [phase, extra] of phases) {
      for (const n of names) {
        await running.get(n)!.stop();
        running.delete(n);
        await start(n, extra);
        await whole(`${n} restarted with ${phase}`);
      }
    }
    // Fully encrypted now: a plaintext agent is refused.
    const plain = await startGossip(config("plain"), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-4000-8000-0000000000ff" });
    try {
      const r = await plain.lan.join([`127.0.0.1:${ports.get("ra")}`]);
      assert.equal(r.joined, 0);
    } finally {
      await plain.stop();
    }
  } finally {
    for (const g of running.values()) await g.stop();
  }
});

test("disable_keyring_file: the keyring from encrypt is not written to data-dir/serf/local.keyring", async () => {
  const key = Buffer.alloc(32, 6).toString("base64");
  for (const disable of [false, true]) {
    const dataDir = tmp();
    const g = await startGossip(config(`k${disable}`, { dev: false, dataDir, encrypt: key, disableKeyringFile: disable, bindAddr: "127.0.0.1" }), {
      logger: nullLogger(),
      clock: systemClock,
      nodeId: "00000000-0000-4000-8000-0000000000ee",
    });
    try {
      assert.equal(existsSync(join(dataDir, "serf", "local.keyring")), !disable, `disable_keyring_file = ${disable}`);
      // Encrypted either way.
      assert.equal((await g.keyring.list())[0]!.keys[key], 1);
    } finally {
      await g.stop();
    }
  }
});

test("serf_lan: LAN gossip binds there instead of bind_addr", async () => {
  const port = await freePort();
  const g = await startGossip(config("bind", { bindAddr: "127.0.0.1", serfLanBindAddr: "127.0.0.2", advertiseAddr: "127.0.0.2", ports: { http: -1, dns: -1, serfLan: port, serfWan: 0, server: 8300, https: -1 } }), {
    logger: nullLogger(),
    clock: systemClock,
    nodeId: "00000000-0000-4000-8000-0000000000dd",
  });
  const reach = (host: string) =>
    new Promise<boolean>((resolve) => {
      const s = connect({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
  try {
    assert.equal(await reach("127.0.0.2"), true, "listening on serf_lan");
    assert.equal(await reach("127.0.0.1"), false, "not on bind_addr");
  } finally {
    await g.stop();
  }
});

test("advertise_reconnect_timeout: a client advertises rc_tm in Go's duration text; others honour it, 0 or garbage falls back", () => {
  assert.equal(consulTags(config("c", { advertiseReconnectTimeoutMs: 3_600_000 }), { nodeId: "x", pool: "lan" }).rc_tm, "1h0m0s");
  assert.equal(consulTags(config("c"), { nodeId: "x", pool: "lan" }).rc_tm, undefined);
  const sink = new CaptureSink();
  const override = reconnectTimeoutOverride(createLogger({ sink }));
  const member = (tags: Record<string, string>) => ({ name: "m", addr: "a:1", tags, status: "failed" as const, statusLTime: 1, vsn: [] });
  assert.equal(override(member({ rc_tm: "10m" }), 72 * 3_600_000), 600_000);
  assert.equal(override(member({ rc_tm: "0s" }), 5), 5);
  assert.equal(override(member({}), 5), 5);
  assert.equal(override(member({ rc_tm: "soon" }), 5), 5);
  assert.match(sink.text(), /Member is advertising a malformed reconnect timeout.*rc_tm=soon/);
});

test("allowed CIDRs: the predicate memberlist's CIDRsAllowed applies; a malformed range is a config error", () => {
  const allow = allowedCidrs(["10.0.0.0/8", "fd00::/8", "192.168.1.7/32"])!;
  assert.equal(allow("10.1.2.3"), true);
  assert.equal(allow("::ffff:10.9.9.9"), true, "IPv4-mapped IPv6");
  assert.equal(allow("192.168.1.7"), true);
  assert.equal(allow("192.168.1.8"), false);
  assert.equal(allow("fd12::1"), true);
  assert.equal(allow("2001:db8::1"), false);
  assert.equal(allowedCidrs([]), undefined);
  assert.throws(() => allowedCidrs(["10.0.0.0/33"]), /Invalid CIDR range "10.0.0.0\/33"/);
  assert.throws(() => allowedCidrs(["ten/8"]), /Invalid CIDR range/);
  assert.throws(() => allowedCidrs(["10.0.0.1"]), /Invalid CIDR range/, "a prefix is required, as in Go's net.ParseCIDR");
});

test("serf_lan_allowed_cidrs: gossip from another network is dropped and counted; an allowed one joins", async () => {
  const mk = (name: string, addr: string, extra: Partial<AgentConfig> = {}) =>
    startGossip(config(name, { bindAddr: addr, advertiseAddr: addr, ...extra }), { logger: nullLogger(), clock: systemClock, nodeId: `00000000-0000-4000-8000-0000000001${name.length}${name.length}` });
  const a = await mk("guard", "127.0.0.1", { serfLanAllowedCidrs: ["127.0.0.2/32"] });
  const outsider = await mk("outsider", "127.0.0.1");
  const insider = await mk("in", "127.0.0.2");
  try {
    const target = `${a.lan.localMember().addr}:${a.lan.localMember().port}`;
    const refused = await outsider.lan.join([target]);
    assert.equal(refused.joined, 0);
    const stats = (a.lan as SerfPool).transport.stats;
    assert.ok(stats.streamsNotAllowed > 0, "the refused connection is counted");
    const ok = await insider.lan.join([target]);
    assert.equal(ok.joined, 1, ok.errors.join("; "));
    await until(() => alive(a.lan).join(",") === "guard,in", "guard sees only the allowed member", tenSeconds);
  } finally {
    for (const g of [a, outsider, insider]) await g.stop();
  }
});
