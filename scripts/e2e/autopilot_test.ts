// End-to-end autopilot: three real servers (`-bootstrap-expect=3`) with a
// short server_stabilization_time; a fourth server joins as a non-voter and
// is promoted once it has been healthy that long; a server killed for good
// (SIGKILL, never restarted) is removed once gossip marks it failed and the
// leader has not heard from it for last_contact_threshold; a second one is
// not, because min_quorum = 3 stops the cleanup. Also the configuration
// endpoint with CAS and the CLI's get-config / set-config / state.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { cairn, getJson, makeCluster, startAgent, waitFor, waitForLeader, type Agent, type Cluster, type ServerSpec } from "./harness.ts";

let cluster: Cluster | undefined;
let fourth: Agent | undefined;
after(async () => {
  await fourth?.stop();
  await cluster?.stopAll();
  if (process.env.KEEP_E2E_DIRS) console.log(`kept ${cluster?.root.path}`);
  else cluster?.root.remove();
});

interface Peer {
  ID: string;
  Node: string;
  Voter: boolean;
}

async function peers(c: Cluster, s: ServerSpec | Agent): Promise<Peer[] | undefined> {
  const url = "http" in s && typeof s.http === "string" ? `${s.http}/v1/operator/raft/configuration` : c.url(s as ServerSpec, "/v1/operator/raft/configuration");
  const body = (await getJson(url, 5_000)) as { Servers?: Peer[] } | undefined;
  return body?.Servers;
}

test("autopilot: a new server is promoted after stabilisation; a dead one is removed, down to min_quorum", { timeout: 180_000 }, async () => {
  const stabilizationMs = 3_000;
  const c = (cluster = await makeCluster(3, {
    prefix: "cairn-autopilot-e2e-",
    config: { autopilot: { cleanup_dead_servers: true, last_contact_threshold: "1s", server_stabilization_time: `${stabilizationMs / 1000}s`, min_quorum: 3 } },
  }));
  for (const s of c.servers) c.start(s);
  const leader = await waitForLeader(c, c.servers);

  // The first leader stored its autopilot {}: the configuration API and get-config show it.
  const conf = await waitFor(async () => {
    const r = await fetch(c.url(leader, "/v1/operator/autopilot/configuration"));
    return r.ok ? ((await r.json()) as Record<string, unknown>) : undefined;
  }, { timeoutMs: 10_000, what: "the stored autopilot configuration" });
  assert.deepEqual(
    { ...conf, CreateIndex: 0, ModifyIndex: 0 },
    {
      CleanupDeadServers: true,
      LastContactThreshold: "1s",
      MaxTrailingLogs: 250,
      MinQuorum: 3,
      ServerStabilizationTime: "3s",
      RedundancyZoneTag: "",
      DisableUpgradeMigration: false,
      UpgradeVersionTag: "",
      CreateIndex: 0,
      ModifyIndex: 0,
    },
  );
  const httpAddr = `${leader.addr}:${leader.http}`;
  const got = await cairn(["operator", "autopilot", "get-config", `-http-addr=${httpAddr}`]);
  assert.equal(got.code, 0, got.stderr);
  assert.match(got.stdout, /^CleanupDeadServers = true\nLastContactThreshold = 1s\nMaxTrailingLogs = 250\nMinQuorum = 3\nServerStabilizationTime = 3s\n/);

  // CAS: a stale ModifyIndex is refused; the current one lands (max_trailing_logs only, the rest as it was).
  const body = JSON.stringify({ ...conf, MaxTrailingLogs: 500 });
  const stale = await fetch(c.url(leader, `/v1/operator/autopilot/configuration?cas=${Number(conf.ModifyIndex) - 1}`), { method: "PUT", body });
  assert.equal(await stale.text(), "false");
  const fresh = await fetch(c.url(leader, `/v1/operator/autopilot/configuration?cas=${Number(conf.ModifyIndex)}`), { method: "PUT", body });
  assert.equal(await fresh.text(), "true");
  const set = await cairn(["operator", "autopilot", "set-config", "-max-trailing-logs=250", `-http-addr=${httpAddr}`]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, "Configuration updated!\n");

  // Health: three healthy voters tolerate one failure.
  const health = await waitFor(async () => {
    const r = await fetch(c.url(leader, "/v1/operator/autopilot/health"));
    const h = (await r.json()) as { Healthy: boolean; FailureTolerance: number; Servers: Array<Record<string, unknown>> };
    return r.status === 200 && h.Healthy && h.Servers.length === 3 ? h : undefined;
  }, { timeoutMs: 15_000, what: "three healthy servers" });
  assert.equal(health.FailureTolerance, 1);
  assert.deepEqual(Object.keys(health.Servers[0]!), ["ID", "Name", "Address", "SerfStatus", "Version", "Leader", "LastContact", "LastTerm", "LastIndex", "Healthy", "Voter", "StableSince"]);

  // A fourth server (no bootstrap-expect) joins: a non-voter first, a voter after the stabilisation time.
  const joins = c.servers.map((s) => `-retry-join=${s.addr}:${s.serfLan}`);
  fourth = await startAgent("s4", { server: true, dir: join(c.root.path, "s4"), args: [...joins, "-retry-interval=1s", `-config-file=${c.configFile}`] });
  const joinedAt = Date.now();
  await waitFor(async () => (await peers(c, leader))?.some((p) => p.Node === "s4" && !p.Voter), { timeoutMs: 30_000, intervalMs: 100, what: "s4 as a non-voter" });
  const state = await cairn(["operator", "autopilot", "state", `-http-addr=${httpAddr}`]);
  assert.equal(state.code, 0, state.stderr);
  assert.match(state.stdout, /Status:\s+non-voter/);
  await waitFor(async () => (await peers(c, leader))?.some((p) => p.Node === "s4" && p.Voter), { timeoutMs: 30_000, intervalMs: 100, what: "s4 promoted to voter" });
  assert.ok(Date.now() - joinedAt >= stabilizationMs, `s4 was promoted ${Date.now() - joinedAt} ms after joining, before server_stabilization_time`);

  // Kill a follower for good: removed once failed and out of contact (4 voters → 3 = min_quorum).
  const followers = c.servers.filter((s) => s !== leader);
  const victim = followers[0]!;
  await c.kill(victim);
  await waitFor(async () => {
    const p = await peers(c, leader);
    return p !== undefined && p.length === 3 && !p.some((x) => x.Node === victim.name) && p.every((x) => x.Voter);
  }, { timeoutMs: 60_000, intervalMs: 200, what: `${victim.name} removed from the Raft configuration` });

  // A second death: 3 voters is min_quorum, so autopilot leaves it in place (and quorum holds: 2 of 3).
  const second = followers[1]!;
  await c.kill(second);
  await waitFor(async () => {
    const r = await fetch(c.url(leader, "/v1/operator/autopilot/health"));
    const h = (await r.json()) as { Servers: Array<{ Name: string; SerfStatus: string; Healthy: boolean }> };
    return r.status === 429 && h.Servers.some((s) => s.Name === second.name && s.SerfStatus === "failed" && !s.Healthy);
  }, { timeoutMs: 60_000, intervalMs: 200, what: `${second.name} seen failed` });
  await new Promise((r) => setTimeout(r, 4_000));
  const after = await peers(c, leader);
  assert.ok(after?.some((p) => p.Node === second.name), `min_quorum 3: ${second.name} must stay in the Raft configuration: ${JSON.stringify(after)}`);
  assert.equal(after?.length, 3);
  const put = await fetch(c.url(leader, "/v1/kv/after-two-deaths"), { method: "PUT", body: "ok" });
  assert.equal(await put.text(), "true");
});
