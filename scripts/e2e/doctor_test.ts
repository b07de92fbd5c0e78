// End-to-end: `cairn doctor` against real clusters of the built binary, one
// scenario per finding it claims to see on a live cluster: a healthy
// 3-server cluster (exit 0), a killed server, a lost quorum, a failing and a
// flapping check, an agent joining with another gossip key, a live server
// removed from Raft, a paused follower autopilot finds unhealthy, a nearly
// full data dir disk (the threshold lowered to what the disk has), a key only
// one agent holds, a primary key only one agent uses, a dead second datacenter, a wall clock 30 s ahead
// (libfaketime), a pool split by nftables, a member claiming another build
// (a Debian `serf` agent with Consul's tags), and no agent to ask (exit 2).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cairn, freePort, makeCluster, serf, startAgent, startDevAgent, startSerf, waitFor, waitForLeader, type Agent, type Cluster, type ServerSpec } from "./harness.ts";

interface Finding {
  id: string;
  severity: string;
  title: string;
  evidence: string[];
  fix: string[];
}
interface Report {
  Healthy: boolean;
  Leader: string;
  Findings: Finding[];
  Error?: string;
}

const key1 = "pUqJrVyVRj5jsiYEkM/tFQYfWyJxr3hbaD0E5ySyYeo=";
const key2 = "H3GGwNLJVmB8W1H0cA7dIz5ZcDCEYhj2cB4BV0t7c0g=";
let c: Cluster;
const clients: Agent[] = [];

async function doctor(addr: string, extra: string[] = []): Promise<{ code: number; report: Report; stdout: string; stderr: string }> {
  const r = await cairn(["doctor", `-http-addr=${addr}`, "-format=json", "-sample=2s", ...extra], { timeoutMs: 60_000 });
  let report: Report;
  try {
    report = JSON.parse(r.stdout) as Report;
  } catch {
    throw new Error(`doctor printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  return { code: r.code, report, stdout: r.stdout, stderr: r.stderr };
}

const addr = (s: ServerSpec) => `${s.addr}:${s.http}`;
const describe = (r: Report) => r.Findings.map((f) => `${f.severity} ${f.id}: ${f.title}\n  ${f.evidence.join("\n  ")}`).join("\n");

async function memberStatus(s: ServerSpec, name: string): Promise<number | undefined> {
  const r = await fetch(c.url(s, "/v1/agent/members"));
  const list = (await r.json()) as { Name: string; Status: number }[];
  return list.find((m) => m.Name === name)?.Status;
}

before(async () => {
  c = await makeCluster(3, { prefix: "cairn-e2e-doctor-", config: { encrypt: key1 } });
  for (const s of c.servers) c.start(s);
  await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
  // Every server promoted and healthy: autopilot's stabilization time is 10 s.
  await waitFor(async () => {
    const h = (await (await fetch(c.url(c.servers[0]!, "/v1/operator/autopilot/health"))).json()) as { Healthy: boolean; Servers: { Voter: boolean }[] };
    return h.Healthy && h.Servers.length === 3 && h.Servers.every((s) => s.Voter);
  }, { timeoutMs: 60_000, what: "3 healthy voters" });
});

after(async () => {
  if (canNft) dropNftTable();
  for (const a of clients) await a.stop();
  await c?.stopAll();
  c?.root.remove();
});

test("doctor: a healthy 3-server cluster has nothing to act on (exit 0), in text too", async () => {
  const { code, report } = await doctor(addr(c.servers[1]!));
  assert.equal(code, 0, describe(report));
  assert.equal(report.Healthy, true);
  assert.deepEqual(report.Findings.filter((f) => f.severity !== "info"), []);
  const text = await cairn(["doctor", `-http-addr=${addr(c.servers[0]!)}`, "-sample=0"]);
  assert.equal(text.code, 0, text.stdout + text.stderr);
  assert.match(text.stdout, /No problems found \(3\/3 servers alive, leader 127\.0\.0\.1:\d+/);
});

test("doctor: a data dir disk at or above -disk-warn-percent is a finding with the statfs figures", async () => {
  // The real statfs of the servers' data dirs; the threshold set to 1% so any disk in use trips it.
  const { code, report } = await doctor(addr(c.servers[0]!), ["-disk-warn-percent=1", "-sample=0"]);
  assert.equal(code, 1, describe(report));
  const disks = report.Findings.filter((f) => f.id === "disk-full");
  assert.deepEqual(disks.map((f) => f.title.split("'")[0]).sort(), ["s1", "s2", "s3"], describe(report));
  assert.match(disks[0]!.evidence[0]!, /^statfs \/.*s\d: \d+\.\d% used, .* free of .*, inodes/);
});

test("doctor: a failing check, and a check flapping while the doctor watches", async () => {
  const s1 = c.servers[0]!;
  const put = async (path: string, body?: unknown) => {
    const r = await fetch(c.url(s1, path), { method: "PUT", body: body === undefined ? undefined : JSON.stringify(body) });
    assert.equal(r.status, 200, `${path}: ${await r.text()}`);
  };
  await put("/v1/agent/check/register", { ID: "disk-probe", Name: "disk probe", TTL: "10m" });
  await put("/v1/agent/check/register", { ID: "flappy", Name: "flappy", TTL: "10m" });
  await put("/v1/agent/check/pass/flappy");
  // A TTL check starts critical; passing first makes the failure a status change, synced with its output at once.
  await put("/v1/agent/check/pass/disk-probe");
  await put("/v1/agent/check/fail/disk-probe?note=probe%20timed%20out");
  await waitFor(async () => {
    const r = (await (await fetch(c.url(s1, "/v1/health/state/critical"))).json()) as { CheckID: string; Output: string }[];
    return r.some((x) => x.CheckID === "disk-probe" && x.Output === "probe timed out");
  }, { what: "the critical check in the catalog" });
  // Flip the other check every 400 ms while the doctor samples for 3 s.
  let flips = 0;
  const timer = setInterval(() => void put(`/v1/agent/check/${flips++ % 2 === 0 ? "fail" : "pass"}/flappy`).catch(() => {}), 400);
  let result: Awaited<ReturnType<typeof doctor>>;
  try {
    result = await doctor(addr(c.servers[1]!), ["-sample=3s"]);
  } finally {
    clearInterval(timer);
  }
  const { code, report } = result;
  assert.equal(code, 1, describe(report));
  const critical = report.Findings.find((f) => f.id === "check-critical" && f.title.includes("disk probe"));
  assert.ok(critical, describe(report));
  assert.match(critical.title, /Check "disk probe" on s1 is critical/);
  assert.ok(critical.evidence.some((e) => e.includes("probe timed out")), critical.evidence.join("\n"));
  const flapping = report.Findings.find((f) => f.id === "check-flapping");
  assert.ok(flapping, describe(report));
  assert.match(flapping.title, /Check flappy on s1 is flapping/);
  await put("/v1/agent/check/deregister/disk-probe");
  await put("/v1/agent/check/deregister/flappy");
});

test("doctor: an agent trying to join with another gossip key shows as decrypt failures on the servers", async () => {
  const rogue = await c.startClient("rogue", { args: [`-encrypt=${key2}`] });
  clients.push(rogue);
  const { code, report } = await doctor(addr(c.servers[0]!), ["-sample=3s"]);
  await rogue.stop();
  assert.equal(code, 1, describe(report));
  const x = report.Findings.find((f) => f.id === "gossip-key-mismatch");
  assert.ok(x, describe(report));
  assert.ok(x.evidence.some((e) => /^s\d: \d+ packets or streams failed to decrypt in \ds/.test(e)), x.evidence.join("\n"));
});

test("doctor: an agent holding a key the others lack shows in the keyring list", async () => {
  // A client whose keyring file holds the cluster's key (primary, so it joins) and one more.
  const dir = join(c.root.path, "keyring-client");
  mkdirSync(join(dir, "serf"), { recursive: true });
  writeFileSync(join(dir, "serf", "local.keyring"), JSON.stringify([key1, key2]));
  const extra = await c.startClient("k1", { dir });
  try {
    await waitFor(async () => (await memberStatus(c.servers[0]!, "k1")) === 1, { what: "k1 in the pool" });
    const { code, report } = await doctor(addr(c.servers[0]!), ["-sample=0"]);
    assert.equal(code, 1, describe(report));
    const x = report.Findings.find((f) => f.id === "keyring-partial");
    assert.ok(x, describe(report));
    assert.ok(x.evidence.some((e) => new RegExp(`^key ${key2.slice(0, 6).replace(/[+/]/g, "\\$&")}… is installed on 1 of 4 nodes$`).test(e)), x.evidence.join("\n"));
  } finally {
    await cairn(["leave", `-http-addr=${extra.httpAddr}`]);
    await extra.stop();
  }
});

test("doctor: an agent encrypting with another primary key (a rotation half done) shows in the keyring list", async () => {
  // The cluster holds key2 too (installed, not used); a client's keyring file makes key2 its primary.
  const install = await cairn(["keyring", `-http-addr=${addr(c.servers[0]!)}`, `-install=${key2}`]);
  assert.equal(install.code, 0, install.stdout + install.stderr);
  const dir = join(c.root.path, "primary-client");
  mkdirSync(join(dir, "serf"), { recursive: true });
  writeFileSync(join(dir, "serf", "local.keyring"), JSON.stringify([key2, key1]));
  const other = await c.startClient("k2", { dir });
  try {
    await waitFor(async () => (await memberStatus(c.servers[0]!, "k2")) === 1, { what: "k2 in the pool" });
    const { code, report } = await doctor(addr(c.servers[0]!), ["-sample=0"]);
    assert.equal(code, 1, describe(report));
    const x = report.Findings.find((f) => f.id === "keyring-primary-split");
    assert.ok(x, describe(report));
    assert.deepEqual(x.evidence.sort(), [`1 nodes use ${key2.slice(0, 6)}… as their primary key`, `3 nodes use ${key1.slice(0, 6)}… as their primary key`].sort());
  } finally {
    await cairn(["leave", `-http-addr=${other.httpAddr}`]);
    await other.stop();
    await cairn(["keyring", `-http-addr=${addr(c.servers[0]!)}`, `-remove=${key2}`]);
  }
});

test("doctor: a live server removed from Raft is in gossip but not in Raft", async () => {
  // cairn's leader puts a live server back within a leader tick (1 s; Consul waits for its 60 s reconcile), so
  // the doctor may read the configuration after the re-add: whenever the configuration it read lacks the server,
  // the finding must be there, and within a few tries it reads such a configuration.
  const leader = await waitForLeader(c, c.servers);
  const victim = c.servers.find((s) => s !== leader)!;
  const inRaft = async () => {
    const r = (await (await fetch(c.url(leader, "/v1/operator/raft/configuration"))).json()) as { Servers: { Node: string }[] };
    return r.Servers.some((s) => s.Node === victim.name);
  };
  const removePeer = () => fetch(c.url(leader, `/v1/operator/raft/peer?address=${encodeURIComponent(c.rpcAddr(victim))}`), { method: "DELETE" });
  let seen = 0;
  // The removal goes by the API, not the CLI, to spare a process start inside the race. While the doctor
  // runs it is repeated every 100 ms, so the server is out of Raft most of the time rather than for the
  // second before the re-add: a doctor that took longer than that second (a loaded machine) lost all 20 tries.
  for (let attempt = 0; attempt < 20 && seen === 0; attempt++) {
    await waitFor(inRaft, { timeoutMs: 30_000, what: `${victim.name} in Raft` });
    const rm = await removePeer();
    assert.equal(rm.status, 200, await rm.text());
    const again = setInterval(() => void removePeer().then((r) => r.arrayBuffer()).catch(() => {}), 100);
    const { code, report } = await doctor(addr(leader), ["-sample=0"]).finally(() => clearInterval(again));
    const raft = (report as unknown as { Facts: { raft?: { node: string }[] } }).Facts.raft ?? [];
    if (raft.some((p) => p.node === victim.name)) continue; // read after the leader put it back
    seen++;
    assert.equal(code, 1, describe(report));
    const x = report.Findings.find((f) => f.id === "server-not-in-raft");
    assert.ok(x, describe(report));
    assert.equal(x.title, `Server ${victim.name} is alive in gossip but not in the Raft configuration`);
  }
  assert.equal(seen, 1, "the doctor never read a configuration without the removed server");
  await waitFor(inRaft, { timeoutMs: 30_000, what: `${victim.name} back in Raft` });
});

test("doctor: a paused follower trails the leader (autopilot unhealthy) before gossip marks it failed", async (t) => {
  const leader = await waitForLeader(c, c.servers);
  const victim = c.servers.find((s) => s !== leader)!;
  type Health = { Healthy: boolean; Servers: { Name: string; Healthy: boolean; SerfStatus: string; Voter: boolean }[] };
  const health = async () => (await (await fetch(c.url(leader, "/v1/operator/autopilot/health"))).json()) as Health;
  await waitFor(async () => {
    const h = await health();
    return h.Healthy && h.Servers.length === 3 && h.Servers.every((s) => s.Voter);
  }, { timeoutMs: 60_000, what: "3 healthy voters again" });
  process.kill(victim.proc!.pid, "SIGSTOP");
  let result: Awaited<ReturnType<typeof doctor>> | undefined;
  try {
    // Unhealthy once the leader has not heard from it for last_contact_threshold (200 ms); gossip takes seconds to fail it.
    await waitFor(async () => (await health()).Servers.some((s) => s.Name === victim.name && !s.Healthy && s.SerfStatus === "alive"), { timeoutMs: 10_000, what: `${victim.name} unhealthy and still alive in gossip` });
    result = await doctor(addr(leader), ["-sample=0", "-timeout=1s"]);
  } finally {
    process.kill(victim.proc!.pid, "SIGCONT");
  }
  const { code, report } = result;
  assert.equal(code, 1, describe(report));
  const x = report.Findings.find((f) => f.id === "server-unhealthy" || f.id === "server-failed");
  assert.ok(x, describe(report));
  // The doctor reads autopilot after the wait above; if gossip failed the server in between, that finding names it instead.
  assert.ok(x.title.includes(victim.name), describe(report));
  t.diagnostic(`finding: ${x.id}`);
  if (x.id === "server-unhealthy") assert.match(x.evidence[0]!, new RegExp(`${victim.name} Healthy=false, LastContact=[\\d.]+m?s, LastIndex=\\d+ \\(leader ${leader.name} at \\d+`));
  await waitFor(async () => {
    const h = await health();
    return h.Healthy && h.Servers.length === 3;
  }, { timeoutMs: 60_000, what: `${victim.name} healthy again` });
});

test("doctor: a killed server is found failed in gossip, with the evidence and the fix", async () => {
  const leader = await waitForLeader(c, c.servers);
  const victim = c.servers.find((s) => s !== leader)!;
  await c.kill(victim);
  await waitFor(async () => (await memberStatus(leader, victim.name)) === 4, { timeoutMs: 30_000, what: `${victim.name} failed in gossip` });
  const { code, report } = await doctor(addr(leader), ["-sample=0"]);
  assert.equal(code, 1, describe(report));
  const x = report.Findings.find((f) => f.id === "server-failed");
  assert.ok(x, describe(report));
  assert.match(x.title, new RegExp(`Server ${victim.name} (is a Raft voter but failed in gossip|has failed in gossip)`));
  assert.ok(x.evidence.some((e) => e.includes(`${victim.name}`) && e.includes("failed")), x.evidence.join("\n"));
  assert.ok(x.fix.some((e) => e.includes(`force-leave ${victim.name}`)), x.fix.join("\n"));
});

test("doctor: with a second server killed the quorum is lost: no leader, who is missing, the peers.json recovery", async () => {
  const alive = [];
  for (const s of c.servers) if ((await memberStatus(s, s.name).catch(() => undefined)) === 1) alive.push(s);
  assert.equal(alive.length, 2);
  const [keep, victim] = alive as [ServerSpec, ServerSpec];
  await c.kill(victim);
  await waitFor(async () => {
    const l = await (await fetch(c.url(keep, "/v1/status/leader"))).json();
    return l === "" && (await memberStatus(keep, victim.name)) === 4;
  }, { timeoutMs: 30_000, what: "no leader and the second server failed" });
  const { code, report } = await doctor(addr(keep), ["-sample=0"]);
  assert.equal(code, 1, describe(report));
  assert.equal(report.Leader, "");
  const x = report.Findings[0]!;
  assert.equal(x.id, "quorum-lost", describe(report));
  assert.equal(x.severity, "critical");
  assert.ok(x.evidence.some((e) => e.includes(`${victim.name} (failed in gossip)`)), x.evidence.join("\n"));
  assert.ok(x.fix.some((e) => e.includes("raft/peers.json") && e.includes(`"address":"${c.rpcAddr(keep)}"`)), x.fix.join("\n"));
});

test("doctor: another datacenter whose servers failed in the WAN pool is unreachable", async () => {
  // Two -dev servers (fast gossip timings on the WAN pool too) in dc1 and dc2, joined over the WAN; dc2 killed.
  const wanPort = await freePort();
  const dc1 = await startDevAgent(["-node=w1", "-datacenter=dc1"]);
  const dc2 = await startDevAgent(["-node=w2", "-datacenter=dc2", `-serf-wan-port=${wanPort}`]);
  clients.push(dc1, dc2);
  const join = await cairn(["join", "-wan", `-http-addr=${dc1.httpAddr}`, `127.0.0.1:${wanPort}`]);
  assert.equal(join.code, 0, join.stdout + join.stderr);
  const wanStatus = async () => ((await (await fetch(`${dc1.http}/v1/agent/members?wan`)).json()) as { Name: string; Status: number }[]).find((m) => m.Name === "w2.dc2")?.Status;
  await waitFor(async () => (await wanStatus()) === 1, { what: "w2.dc2 alive in the WAN pool" });
  const healthy = await doctor(dc1.httpAddr, ["-sample=0"]);
  assert.ok(!healthy.report.Findings.some((f) => f.id.startsWith("datacenter") || f.id.startsWith("wan")), describe(healthy.report));
  await dc2.stop();
  await waitFor(async () => (await wanStatus()) === 4, { timeoutMs: 30_000, what: "w2.dc2 failed in the WAN pool" });
  const { code, report } = await doctor(dc1.httpAddr, ["-sample=0"]);
  assert.equal(code, 1, describe(report));
  const x = report.Findings.find((f) => f.id === "datacenter-unreachable");
  assert.ok(x, describe(report));
  assert.equal(x.severity, "critical");
  assert.equal(x.title, "Datacenter dc2 is unreachable over the WAN");
  assert.deepEqual(x.evidence, [`WAN pool: w2.dc2 (127.0.0.1:${wanPort}) failed`]);
});

const nftTable = `cairn_doctor_${process.pid}`;
const canNft = spawnSync("nft", ["list", "tables"]).status === 0;
const dropNftTable = () => spawnSync("nft", ["delete", "table", "inet", nftTable]);

test("doctor: a gossip partition (nftables) splits the pool: the servers' views disagree", { skip: !canNft && "nft is not usable here (needs root and nftables)" }, async () => {
  // Three servers on their own loopback addresses; s3 cut from s1 and s2 (every packet between their addresses
  // dropped), while the doctor, at 127.0.0.1, still reaches each one's HTTP API.
  const p = await makeCluster(3, { prefix: "cairn-e2e-doctor-split-", address: (i) => `127.0.3.${i + 1}` });
  try {
    for (const s of p.servers) p.start(s);
    await waitForLeader(p, p.servers, { timeoutMs: 60_000 });
    const [s1, s2, s3] = p.servers as [ServerSpec, ServerSpec, ServerSpec];
    const statusOf = async (at: ServerSpec, name: string) => ((await (await fetch(p.url(at, "/v1/agent/members"))).json()) as { Name: string; Status: number }[]).find((m) => m.Name === name)?.Status;
    await waitFor(async () => (await statusOf(s1, "s3")) === 1 && (await statusOf(s3, "s1")) === 1, { what: "one pool" });
    const rules = [s1, s2].flatMap((o) => [`ip saddr ${o.addr} ip daddr ${s3.addr} drop`, `ip saddr ${s3.addr} ip daddr ${o.addr} drop`]);
    const script = `add table inet ${nftTable}\ndelete table inet ${nftTable}\ntable inet ${nftTable} {\n  chain out {\n    type filter hook output priority 0; policy accept;\n${rules.map((r) => `    ${r}\n`).join("")}  }\n}\n`;
    const r = spawnSync("nft", ["-f", "-"], { input: script, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    await waitFor(async () => (await statusOf(s1, "s3")) === 4 && (await statusOf(s3, "s1")) === 4, { timeoutMs: 30_000, what: "each side sees the other failed" });
    const { code, report } = await doctor(`${s1.addr}:${s1.http}`, ["-sample=0"]);
    assert.equal(code, 1, describe(report));
    const x = report.Findings.find((f) => f.id === "membership-disagreement");
    assert.ok(x, describe(report));
    assert.ok(x.evidence.some((e) => /^s1: s1 sees alive, .*s3 sees failed/.test(e)), x.evidence.join("\n"));
    assert.ok(x.evidence.some((e) => /^s3: s1 sees failed, .*s3 sees alive/.test(e)), x.evidence.join("\n"));
    // s3, alone, knows no leader while s1 and s2 name theirs.
    const l = report.Findings.find((f) => f.id === "leader-disagreement");
    assert.ok(l, describe(report));
    assert.ok(l.evidence.some((e) => e === 's3: leader ""'), l.evidence.join("\n"));
  } finally {
    dropNftTable();
    await p.stopAll();
    p.root.remove();
  }
});

const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

test("doctor: an agent whose wall clock runs 30 s ahead (libfaketime) is a clock skew", { skip: !existsSync(libfaketime) && "libfaketime is not installed (Debian package faketime; .ci/run installs it)" }, async () => {
  const server = await startDevAgent(["-node=clock-server"]);
  clients.push(server);
  // Only the wall clock is moved: timers and timeouts run on the monotonic clock, which stays true.
  const skewed = await startAgent("clock-client", { args: [`-retry-join=${server.serfAddr}`], env: { LD_PRELOAD: libfaketime, FAKETIME: "+30s", DONT_FAKE_MONOTONIC: "1" } });
  clients.push(skewed);
  await waitFor(async () => ((await (await fetch(`${skewed.http}/v1/agent/members`)).json()) as unknown[]).length === 2, { what: "the client in the server's pool" });
  const { code, report } = await doctor(skewed.httpAddr, ["-sample=0"]);
  assert.equal(code, 1, describe(report));
  const x = report.Findings.find((f) => f.id === "clock-skew");
  assert.ok(x, describe(report));
  assert.match(x.title, /Clocks differ by about (29|30|31)\.\ds/);
  assert.ok(x.evidence.some((e) => /^clock-client: \+(29|30|31)\d{3} ms/.test(e)), x.evidence.join("\n"));
});

test("doctor: a member claiming another build (a real serf agent with Consul's tags) is a version skew, client ahead of the servers a warning", async () => {
  const server = await startDevAgent(["-node=vsn-server"]);
  clients.push(server);
  type M = { Name: string; Status: number; Tags: Record<string, string> };
  const members = async () => (await (await fetch(`${server.http}/v1/agent/members`)).json()) as M[];
  const own = (await members()).find((m) => m.Name === "vsn-server")!;
  const [major, minor] = own.Tags.build!.split(":")[0]!.split(".").map(Number) as [number, number];
  const newer = `${major}.${minor + 1}.0`;
  // The tags a Consul client agent gossips, with a build one minor release ahead of the server's.
  const tags = ["role=node", "dc=dc1", "segment=", "vsn=2", "vsn_min=2", "vsn_max=3", `build=${newer}:abcdef12`, "id=5d7d0a56-c2ae-4bd1-9f3e-0c7d0f1b0a11"];
  const other = await startSerf("vsn-client", { args: [`-join=${server.serfAddr}`, ...tags.flatMap((t) => ["-tag", t])] });
  try {
    await waitFor(async () => (await members()).some((m) => m.Name === "vsn-client" && m.Status === 1), { timeoutMs: 30_000, what: "vsn-client alive in the server's pool" });
    const { code, report } = await doctor(server.httpAddr, ["-sample=0"]);
    assert.equal(code, 1, describe(report));
    const x = report.Findings.find((f) => f.id === "version-skew");
    assert.ok(x, describe(report));
    assert.equal(x.severity, "warning");
    const ours = own.Tags.build!.split(":")[0]!;
    assert.equal(x.title, `Clients run a newer version than the servers (${ours}): vsn-client`);
    assert.deepEqual(x.evidence, [`${newer} (client): vsn-client`, `${ours} (server): vsn-server`].sort());
    assert.match(x.fix[0]!, /^Upgrade the servers first, one at a time, to the clients' version, or put vsn-client back on /);
    const text = await cairn(["doctor", `-http-addr=${server.httpAddr}`, "-sample=0"]);
    assert.equal(text.code, 1, text.stdout + text.stderr);
    assert.ok(text.stdout.includes(`[WARNING] Clients run a newer version than the servers (${ours}): vsn-client`), text.stdout);
    assert.ok(text.stdout.includes(`- ${newer} (client): vsn-client`), text.stdout);

    // The same client one minor release behind (as mid-rollout, servers first): only information.
    if (minor > 0) {
      const older = `${major}.${minor - 1}.3`;
      const set = await serf(other, ["tags", "-set", `build=${older}:abcdef12`]);
      assert.equal(set.code, 0, set.stdout + set.stderr);
      await waitFor(async () => (await members()).find((m) => m.Name === "vsn-client")?.Tags.build === `${older}:abcdef12`, { timeoutMs: 30_000, what: "the new build tag gossiped" });
      const later = await doctor(server.httpAddr, ["-sample=0"]);
      const y = later.report.Findings.find((f) => f.id === "version-skew");
      assert.ok(y, describe(later.report));
      assert.equal(y.severity, "info");
      assert.match(y.title, /older version than the servers .* within one minor release/);
      assert.ok(y.evidence.includes(`${older} (client): vsn-client`), y.evidence.join("\n"));
    }
  } finally {
    await serf(other, ["leave"]).catch(() => undefined);
    await other.proc.kill("SIGKILL");
  }
});

test("doctor: no agent to ask exits 2", async () => {
  const port = await freePort();
  const r = await cairn(["doctor", `-http-addr=127.0.0.1:${port}`, "-sample=0"]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`Cannot ask the agent at 127\\.0\\.0\\.1:${port}`));
  const j = await doctor(`127.0.0.1:${port}`, ["-sample=0"]);
  assert.equal(j.code, 2);
  assert.equal(j.report.Healthy, false);
});
