// `-dev` runs the server's Raft with one in-memory voter: the status and
// operator endpoints answer from that Raft, and the raft_* config keys reach it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildConfig } from "../config/mod.ts";
import { FanoutSink } from "../log/mod.ts";
import { startAgent } from "./agent.ts";

test("dev agent: leader at start, one voter in /v1/operator/raft/configuration, real Raft stats, raft_snapshot_threshold applies", async () => {
  const config = buildConfig({
    dev: true,
    sources: [{ name: "raft.json", format: "json", text: JSON.stringify({ raft_snapshot_interval: "20ms", raft_snapshot_threshold: 8, raft_trailing_logs: 2 }) }],
    flags: { ports: { http: 0, dns: -1, serfLan: 0, serfWan: 0, server: 8300 }, nodeName: "devnode" },
  });
  const agent = await startAgent(config, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() });
  const base = `http://127.0.0.1:${agent.httpAddr!.port}`;
  const json = async (path: string, init?: RequestInit): Promise<unknown> => {
    const r = await fetch(`${base}${path}`, init);
    assert.equal(r.status, 200, `${path}: ${r.status} ${await r.clone().text()}`);
    return r.json();
  };
  try {
    // Leader before startAgent resolved: no waiting.
    assert.equal(await json("/v1/status/leader"), "127.0.0.1:8300");
    assert.deepEqual(await json("/v1/status/peers"), ["127.0.0.1:8300"]);
    const conf = (await json("/v1/operator/raft/configuration")) as { Servers: Array<Record<string, unknown>>; Index: number };
    assert.equal(conf.Servers.length, 1);
    assert.deepEqual(
      { ...conf.Servers[0], ID: typeof conf.Servers[0]!.ID },
      { ID: "string", Node: "devnode", Address: "127.0.0.1:8300", Leader: true, ProtocolVersion: "3", Voter: true, LastIndex: conf.Servers[0]!.LastIndex },
    );
    assert.ok(conf.Index >= 2, `index ${conf.Index}`);

    for (let i = 0; i < 12; i++) {
      const r = await fetch(`${base}/v1/kv/k${i}`, { method: "PUT", body: String(i) });
      assert.equal(await r.text(), "true");
    }
    // The threshold is checked every 20 to 40 ms (raft_snapshot_interval): wait for a check.
    const raftStats = async () => ((await json("/v1/agent/self")) as { Stats: { raft: Record<string, string> } }).Stats.raft;
    for (let i = 0; i < 500 && Number((await raftStats()).last_snapshot_index) < 8; i++) await new Promise((r) => setTimeout(r, 10));
    const raft = await raftStats();
    assert.equal(raft.state, "Leader");
    assert.equal(raft.num_peers, "0");
    assert.equal(raft.leader_addr, "127.0.0.1:8300");
    assert.ok(Number(raft.applied_index) >= 14, `applied ${raft.applied_index}`);
    assert.ok(Number(raft.last_snapshot_index) >= 8, `a snapshot after 8 entries: ${JSON.stringify(raft)}`);
    const consistent = await fetch(`${base}/v1/kv/k11?consistent&raw`);
    assert.equal(await consistent.text(), "11");

    // The only voter can neither hand over leadership nor remove itself.
    const transfer = await fetch(`${base}/v1/operator/raft/transfer-leader`, { method: "POST" });
    assert.notEqual(transfer.status, 200);
    assert.match(await transfer.text(), /Cannot transfer leadership: no other voter/);
    const remove = await fetch(`${base}/v1/operator/raft/peer?address=127.0.0.1:8300`, { method: "DELETE" });
    assert.notEqual(remove.status, 200);
    assert.match(await remove.text(), /cannot remove the last voter/);
    assert.equal(await json("/v1/status/leader"), "127.0.0.1:8300");

    // Autopilot: the leader duty stores the agent's autopilot {} (Consul's defaults here); one healthy voter.
    let ap: Response | undefined;
    for (let i = 0; i < 300 && !(ap = await fetch(`${base}/v1/operator/autopilot/configuration`)).ok; i++) await new Promise((r) => setTimeout(r, 10));
    const apConf = (await ap!.json()) as Record<string, unknown>;
    assert.deepEqual([apConf.CleanupDeadServers, apConf.LastContactThreshold, apConf.MaxTrailingLogs, apConf.MinQuorum, apConf.ServerStabilizationTime], [true, "200ms", 250, 0, "10s"]);
    const health = (await json("/v1/operator/autopilot/health")) as { Healthy: boolean; FailureTolerance: number; Servers: Array<Record<string, unknown>> };
    assert.deepEqual([health.Healthy, health.FailureTolerance, health.Servers.length, health.Servers[0]!.Name, health.Servers[0]!.Leader, health.Servers[0]!.Voter], [true, 0, 1, "devnode", true, true]);
    const state = (await json("/v1/operator/autopilot/state")) as { Leader: string; Voters: string[] };
    assert.deepEqual(state.Voters, [state.Leader]);
  } finally {
    await agent.stop();
  }
});
