// End-to-end against `cairn agent -dev` (the built binary): the smaller API
// pieces a Consul user meets — /v1/agent/version, ?filter on
// /v1/agent/members, a KV key with a control character refused, and /v1/txn
// with Node, Service and Check operations that the catalog and the CLI then
// show (and that roll back as a whole on a stale CAS).
import assert from "node:assert/strict";
import { test } from "node:test";
import { cairn, startDevAgent } from "./harness.ts";

test("api gaps e2e: agent/version, members ?filter, control characters in keys, txn catalog operations", { timeout: 60_000 }, async () => {
  const a = await startDevAgent();
  try {
    const v = (await (await fetch(`${a.http}/v1/agent/version`)).json()) as Record<string, string>;
    assert.deepEqual(Object.keys(v), ["SHA", "BuildDate", "HumanVersion", "FIPS"]);
    assert.match(v.BuildDate!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(v.FIPS, "");

    const self = (await (await fetch(`${a.http}/v1/agent/self`)).json()) as { Config: { NodeName: string }; Coord: { Vec: number[] } | null };
    assert.equal(self.Coord?.Vec.length, 8, "agent/self carries the agent's coordinate");
    const name = self.Config.NodeName;
    const members = async (filter: string) => {
      const r = await fetch(`${a.http}/v1/agent/members?filter=${encodeURIComponent(filter)}`);
      return { status: r.status, body: await r.text() };
    };
    assert.deepEqual(JSON.parse((await members(`Name == "${name}" and Tags.role == "consul"`)).body).map((m: { Name: string }) => m.Name), [name]);
    assert.equal((await members('Name == "nobody"')).body, "[]");
    assert.equal((await members("Name ==")).status, 400);

    const bad = await fetch(`${a.http}/v1/kv/app%0Aconfig`, { method: "PUT", body: "x" });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /key contains invalid character '\\x0a' at position 3/);

    const txn = async (ops: unknown) => {
      const r = await fetch(`${a.http}/v1/txn`, { method: "PUT", body: JSON.stringify(ops) });
      return { status: r.status, json: (await r.json()) as { Results: Array<Record<string, Record<string, unknown>>> | null; Errors: Array<{ OpIndex: number; What: string }> | null } };
    };
    const put = await txn([
      { Node: { Verb: "set", Node: { Node: "ext-1", Address: "192.0.2.10" } } },
      { Service: { Verb: "set", Node: "ext-1", Service: { ID: "db1", Service: "db", Port: 5432, Tags: ["primary"] } } },
      { Check: { Verb: "set", Check: { Node: "ext-1", CheckID: "db1-alive", Name: "db alive", Status: "passing", ServiceID: "db1" } } },
    ]);
    assert.equal(put.status, 200, JSON.stringify(put.json));
    const svcIndex = put.json.Results![1]!.Service!.ModifyIndex as number;
    const health = (await (await fetch(`${a.http}/v1/health/service/db?passing`)).json()) as Array<{ Node: { Node: string }; Service: { ID: string }; Checks: Array<{ CheckID: string }> }>;
    assert.deepEqual(health.map((h) => [h.Node.Node, h.Service.ID, h.Checks.map((c) => c.CheckID)]), [["ext-1", "db1", ["db1-alive"]]]);
    const cli = await cairn(["catalog", "services", `-http-addr=${a.httpAddr}`, "-tags"]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^db\s+primary$/m);

    // A stale CAS rolls the whole transaction back and names the op.
    const stale = await txn([
      { KV: { Verb: "set", Key: "txn/seen", Value: "eA==" } },
      { Service: { Verb: "cas", Node: "ext-1", Service: { ID: "db1", Service: "db", Port: 6543, ModifyIndex: svcIndex + 100 } } },
    ]);
    assert.equal(stale.status, 409);
    assert.deepEqual(stale.json.Errors, [{ OpIndex: 1, What: 'failed to set service "db1" on node "ext-1", index is stale' }]);
    assert.equal((await fetch(`${a.http}/v1/kv/txn/seen`)).status, 404);

    const del = await txn([{ Node: { Verb: "delete-cas", Node: { Node: "ext-1", ModifyIndex: put.json.Results![0]!.Node!.ModifyIndex } } }]);
    assert.equal(del.status, 200, JSON.stringify(del.json));
    assert.equal(await (await fetch(`${a.http}/v1/catalog/service/db`)).text(), "[]");
  } finally {
    await a.proc.kill();
  }
});

test("api gaps e2e: disable_coordinates turns coordinates off (agent/self Coord null, /v1/coordinate 401)", { timeout: 60_000 }, async () => {
  const a = await startDevAgent(["-hcl=disable_coordinates = true"]);
  try {
    const self = (await (await fetch(`${a.http}/v1/agent/self`)).json()) as { Coord: unknown };
    assert.equal(self.Coord, null);
    const r = await fetch(`${a.http}/v1/coordinate/nodes`);
    assert.deepEqual([r.status, await r.text()], [401, "Coordinate support disabled"]);
    assert.doesNotMatch(a.proc.output(), /disable_coordinates/, "no 'not implemented' warning for the key");
  } finally {
    await a.proc.kill();
  }
});
