// Two datacenters on loopback, for the multi-datacenter e2e test and the
// multi-dc benchmark: dc1 has 3 servers and a client (c1, with DNS and
// translate_wan_addrs), dc2 one server and a client (c2, WAN address 127.0.0.9); joined by one `cairn join -wan` of dc2's server to
// one server of dc1 (the flood join brings in the other servers of dc1).
import assert from "node:assert/strict";
import { cairn, freePort, makeCluster, waitForLeader, type Agent, type Cluster } from "./harness.ts";

/** The last lines each server of `c` wrote, for a failure message. */
export function tails(c: Cluster): string {
  return c.servers.map((s) => `\n--- ${s.name} (tail) ---\n${c.output(s).slice(-2500)}`).join("");
}

export interface TwoDcs {
  dc1: Cluster;
  dc2: Cluster;
  c1: Agent;
  c2: Agent;
  /** c1's DNS port. */
  c1Dns: number;
  stop(): Promise<void>;
}

/** dc1 (3 servers, client c1 with DNS) and dc2 (1 server, client c2), joined by one `join -wan`. */
export async function startTwoDcs(): Promise<TwoDcs> {
  const dc1 = await makeCluster(3, { config: { datacenter: "dc1", retry_interval_wan: "1s" }, prefix: "cairn-dc1-" });
  const dc2 = await makeCluster(1, { config: { datacenter: "dc2", retry_interval_wan: "1s" }, prefix: "cairn-dc2-" });
  for (const s of dc1.servers) dc1.start(s);
  for (const s of dc2.servers) dc2.start(s);
  try {
    await waitForLeader(dc1, dc1.servers, { timeoutMs: 60_000 });
    await waitForLeader(dc2, dc2.servers, { timeoutMs: 60_000 });
  } catch (err) {
    throw new Error(`${String(err)}${tails(dc1)}${tails(dc2)}`);
  }
  const c1Dns = await freePort();
  // c2 advertises a WAN address of its own (127.0.0.9, in its catalog entry's tagged addresses);
  // c1 translates addresses of other datacenters to their WAN ones (translate_wan_addrs).
  const c1 = await dc1.startClient("c1", { args: ["-datacenter=dc1", `-dns-port=${c1Dns}`, "-hcl=translate_wan_addrs = true"] });
  const c2 = await dc2.startClient("c2", { args: ["-datacenter=dc2", "-advertise-wan=127.0.0.9"] });
  // One join -wan, from dc2's server to one server of dc1.
  const s1 = dc1.servers[0]!;
  const joined = await cairn(["join", "-wan", `-http-addr=${dc2.servers[0]!.addr}:${dc2.servers[0]!.http}`, `${s1.addr}:${s1.serfWan}`]);
  assert.equal(joined.code, 0, joined.stderr);
  return {
    dc1,
    dc2,
    c1,
    c2,
    c1Dns,
    async stop() {
      await c1.stop();
      await c2.stop();
      await dc1.stopAll();
      await dc2.stopAll();
    },
  };
}
