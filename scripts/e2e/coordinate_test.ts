// End-to-end network coordinates: three servers and a client agent, all
// cairn processes on loopback. Every agent sends its LAN coordinate to the
// servers (sync_coordinate_interval_min, shortened here to 300 ms), the leader
// applies them through Raft every consul.coordinate.update_period (300 ms
// here), and /v1/coordinate/nodes is the catalog's view on every server:
// blocking queries wake on the next batch, python-consul reads it, `cairn rtt`
// uses it, PUT /v1/coordinate/update adds one by hand, and deregistering the
// node deletes it. /v1/agent/self carries the agent's own coordinate.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { cairn, makeCluster, run, waitFor, waitForLeader, type Agent } from "./harness.ts";

interface CoordJson { Vec: number[]; Error: number; Adjustment: number; Height: number }
interface EntryJson { Node: string; Segment: string; Coord: CoordJson }

async function nodes(base: string, query = ""): Promise<{ index: number; list: EntryJson[] }> {
  const r = await fetch(`${base}/v1/coordinate/nodes${query}`);
  if (!r.ok) throw new Error(`coordinate/nodes: ${r.status} ${await r.text()}`);
  return { index: Number(r.headers.get("X-Consul-Index")), list: (await r.json()) as EntryJson[] };
}

function tail(a: Agent): string {
  return `\n--- ${a.name} (tail) ---\n${a.proc.output().slice(-3000)}`;
}

test("coordinates e2e: a client's coordinate reaches every server's catalog after the sync period", { timeout: 180_000 }, async () => {
  const fast = { sync_coordinate_interval_min: "300ms", consul: { coordinate: { update_period: "300ms" } } };
  const c = await makeCluster(3, { config: fast, prefix: "cairn-coord-e2e-" });
  try {
    for (const s of c.servers) c.start(s);
    await waitForLeader(c, c.servers);
    const clientConfig = join(c.root.path, "client.json");
    writeFileSync(clientConfig, JSON.stringify({ sync_coordinate_interval_min: "300ms" }));
    const client = await c.startClient("web-1", { args: [`-config-file=${clientConfig}`] });

    // The agent's own coordinate in agent/self.
    const self = (await (await fetch(`${client.http}/v1/agent/self`)).json()) as { Coord: CoordJson | null };
    assert.ok(self.Coord && self.Coord.Vec.length === 8, `agent/self Coord: ${JSON.stringify(self.Coord)}`);

    // Every agent's coordinate lands in the catalog, seen through the client (forwarded to the leader).
    const seen = await waitFor(async () => {
      const r = await nodes(client.http);
      const names = r.list.map((e) => e.Node);
      return ["s1", "s2", "s3", "web-1"].every((n) => names.includes(n)) ? r : undefined;
    }, { timeoutMs: 30_000, what: "web-1 and the servers in /v1/coordinate/nodes" }).catch((err) => { throw new Error(`${String(err)}${tail(client)}`); });
    assert.deepEqual(seen.list.map((e) => e.Node), [...seen.list.map((e) => e.Node)].sort(), "sorted by node name");
    assert.ok(seen.index > 1);
    const mine = seen.list.find((e) => e.Node === "web-1")!;
    assert.equal(mine.Segment, "");
    assert.equal(mine.Coord.Vec.length, 8);

    // Replicated: each server answers from its own state (?stale) with the client's coordinate.
    for (const s of c.servers) {
      await waitFor(async () => (await nodes(`http://${s.addr}:${s.http}`, "?stale")).list.some((e) => e.Node === "web-1"), { what: `web-1 on ${s.name}` });
    }

    // A blocking query wakes with the next batch (coordinates move with every probe and are sent every ~300-600 ms).
    const t0 = Date.now();
    const woke = await nodes(client.http, `?index=${seen.index}&wait=20s`);
    assert.ok(woke.index > seen.index, `index ${woke.index} > ${seen.index}`);
    assert.ok(Date.now() - t0 < 15_000, "woken by a batch, not by the wait running out");

    // python-consul's Coordinate.nodes (index, list), when the Debian package is there (CI installs it).
    const python = "/usr/bin/python3";
    if (existsSync(python) && (await run(python, ["-c", "import consul"])).code === 0) {
      const script = [
        "import consul, sys",
        `c = consul.Consul(host="127.0.0.1", port=${client.httpPort})`,
        "index, entries = c.coordinate.nodes()",
        "assert int(index) > 0, index",
        "names = sorted(e['Node'] for e in entries)",
        "assert 'web-1' in names, names",
        "assert all(len(e['Coord']['Vec']) == 8 for e in entries)",
        "print('python-consul coordinate ok', len(names))",
      ].join("\n");
      const py = await run(python, ["-c", script], { timeoutMs: 30_000 });
      assert.equal(py.code, 0, py.stdout + py.stderr);
      assert.match(py.stdout, /python-consul coordinate ok 4/);
    }

    // `cairn rtt` between the client and a server, from the catalog's coordinates.
    const rtt = await cairn(["rtt", `-http-addr=${client.httpAddr}`, "web-1", "s1"]);
    assert.equal(rtt.code, 0, rtt.stderr);
    assert.match(rtt.stdout, /^Estimated web-1 <-> s1 rtt: \d+\.\d{3} ms \(using LAN coordinates\)$/m);

    // By hand: an external node's coordinate; deregistering the node deletes it.
    const put = async (path: string, body: unknown) => {
      const r = await fetch(`${client.http}${path}`, { method: "PUT", body: JSON.stringify(body) });
      assert.equal(r.status, 200, `${path}: ${await r.text()}`);
    };
    await put("/v1/catalog/register", { Node: "ext-1", Address: "192.0.2.10" });
    const coord = { Vec: [0.001, 0, 0, 0, 0, 0, 0, 0], Error: 0.3, Adjustment: 0, Height: 0.00001 };
    await put("/v1/coordinate/update", { Node: "ext-1", Segment: "", Coord: coord });
    await waitFor(async () => (await fetch(`${client.http}/v1/coordinate/node/ext-1`)).status === 200, { what: "ext-1's coordinate" });
    const one = (await (await fetch(`${client.http}/v1/coordinate/node/ext-1`)).json()) as EntryJson[];
    assert.deepEqual(one.map((e) => [e.Node, e.Coord]), [["ext-1", coord]]);
    await put("/v1/catalog/deregister", { Node: "ext-1" });
    const gone = await fetch(`${client.http}/v1/coordinate/node/ext-1`);
    assert.equal(gone.status, 404);
    assert.ok(!(await nodes(client.http)).list.some((e) => e.Node === "ext-1"));
  } finally {
    await c.stopAll();
    c.root.remove();
  }
});
