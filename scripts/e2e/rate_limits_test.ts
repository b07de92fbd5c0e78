// End-to-end: limits.request_limits on a server and limits.rpc_rate on a
// client agent, on the built binary. A write the leader refuses reaches the
// client's HTTP caller as Consul's 503 (and `cairn kv put` fails with its
// text); the leader's own duties are exempt (the client is still registered
// by the serfHealth reconcile); the client's own bucket answers 429 without
// asking a server; both show in /v1/agent/metrics.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { cairn, makeCluster, waitFor, waitForLeader, type Agent, type Cluster } from "./harness.ts";

/** The Prometheus lines of a counter: running totals (the JSON shows only the last finished 10 s interval). */
async function counters(http: string, name: string): Promise<string[]> {
  const text = await (await fetch(`${http}/v1/agent/metrics?format=prometheus`)).text();
  return text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

const prometheus = "-hcl=telemetry { prometheus_retention_time = \"60s\" }";

describe("rate limits on a server and a client agent", () => {
  let cluster: Cluster;
  let client: Agent;
  let limited: Agent;
  before(async () => {
    cluster = await makeCluster(1, { prefix: "cairn-e2e-limits-", config: { limits: { request_limits: { mode: "enforcing", write_rate: 0 } }, telemetry: { prometheus_retention_time: "60s" } } });
    cluster.start(cluster.servers[0]!);
    await waitForLeader(cluster, cluster.servers, { timeoutMs: 60_000 });
    client = await cluster.startClient("c1");
    limited = await cluster.startClient("c2", { args: ["-hcl=limits { rpc_rate = 0\nrpc_max_burst = 0 }", prometheus] });
  });
  after(async () => {
    await limited?.stop();
    await client?.stop();
    await cluster?.stopAll();
    cluster?.root.remove();
  });

  test("a write the leader refuses is a 503 with Consul's text, through a client agent and the CLI; the leader's duties go on", async () => {
    const server = cluster.servers[0]!;
    // The leader registers the clients itself (serfHealth reconcile): internal, never limited.
    await waitFor(async () => {
      const nodes = (await (await fetch(cluster.url(server, "/v1/catalog/nodes"))).json()) as Array<{ Node: string }>;
      return nodes.some((n) => n.Node === "c1");
    }, { timeoutMs: 30_000, what: "c1 in the catalog" });
    const r = await fetch(`${client.http}/v1/kv/limited`, { method: "PUT", body: "x" });
    assert.equal(r.status, 503);
    assert.equal(await r.text(), "rate limit exceeded for operation that can only be performed by the leader, try again later");
    const put = await cairn(["kv", "put", `-http-addr=${client.httpAddr}`, "limited", "x"]);
    assert.equal(put.code, 1);
    assert.match(put.stderr, /rate limit exceeded for operation that can only be performed by the leader/);
    const read = await fetch(`${client.http}/v1/kv/limited`);
    assert.equal(read.status, 404, "reads are not limited here");
    const seen = await counters(cluster.url(server, ""), "consul_rpc_rate_limit_exceeded");
    assert.ok(seen.some((l) => l.includes('op="KVS.Apply"') && l.includes('limit_type="global/write"') && l.includes('mode="enforcing"')), seen.join("\n"));
  });

  test("a client agent over its rpc_rate answers 429 RPC rate limit exceeded", async () => {
    const r = await fetch(`${limited.http}/v1/kv/anything`);
    assert.equal(r.status, 429);
    assert.equal(await r.text(), "RPC rate limit exceeded");
    assert.equal((await counters(limited.http, "consul_client_rpc_exceeded")).length, 1);
  });
});
