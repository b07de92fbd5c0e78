// End-to-end: a prepared query created with python-consul (`query.create`,
// /usr/bin/python3) against `dist/cairn agent -dev`, then resolved with dig
// as `<name>.query.consul` SRV. python-consul always sends a
// name_prefix_match template, so `db-east` also resolves through the `db`
// prefix, and the query cannot be run by its ID (Consul refuses templates by
// ID). A passing and a critical instance check the health filter.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { run, startDevAgent, waitFor } from "./harness.ts";

const digBin = "/usr/bin/dig";
const python = "/usr/bin/python3";

describe("prepared queries on dist/cairn agent -dev: python-consul creates, dig resolves", { skip: (!existsSync(digBin) || !existsSync(python)) && "dig or /usr/bin/python3 is missing" }, () => {
  test("query.create, /v1/query/<name>/execute, and <name>.query.consul SRV with the query's TTL", async () => {
    const agent = await startDevAgent();
    const dnsPort = agent.dnsPort;
    for (const [node, port, status] of [["db-1", 5432, "passing"], ["db-2", 5433, "critical"]] as const) {
      const r = await fetch(`${agent.http}/v1/catalog/register`, {
        method: "PUT",
        body: JSON.stringify({
          Node: node,
          Address: `127.0.0.${port - 5430}`,
          Service: { Service: "postgres", Port: port, Tags: ["primary"] },
          Check: { CheckID: "pg", Name: "pg", Status: status, ServiceID: "postgres" },
        }),
      });
      assert.ok(r.ok, `register ${node}: ${r.status} ${await r.text()}`);
    }
    const script = `
import consul, json, sys
c = consul.Consul(host="127.0.0.1", port=int(sys.argv[1]))
q = c.query.create("postgres", name="db", tags=["primary"], ttl="9s")
got = c.query.get(q["ID"])
print(json.dumps({"id": q["ID"], "got": got}))
`;
    const py = await run(python, ["-c", script, String(agent.httpPort)], { timeoutMs: 30_000 });
    assert.equal(py.code, 0, py.stderr);
    const out = JSON.parse(py.stdout) as { id: string; got: Array<{ ID: string; Name: string; Service: { Service: string; Tags: string[] }; DNS: { TTL: string }; Template: { Type: string } }> };
    assert.deepEqual(out.got.map((q) => [q.ID, q.Name, q.Service.Service, q.Service.Tags, q.DNS.TTL, q.Template.Type]), [
      [out.id, "db", "postgres", ["primary"], "9s", "name_prefix_match"],
    ]);

    const exec = await (await fetch(`${agent.http}/v1/query/db/execute`)).json() as { Service: string; Nodes: Array<{ Node: { Node: string } }>; Failovers: number };
    assert.deepEqual([exec.Service, exec.Nodes.map((n) => n.Node.Node), exec.Failovers], ["postgres", ["db-1"], 0]);

    for (const name of ["db.query.consul", "db-east.query.consul"]) {
      const dig = await waitFor(async () => {
        const r = await run(digBin, ["@127.0.0.1", "-p", String(dnsPort), "+time=2", "+tries=1", name, "SRV"], { timeoutMs: 15_000 });
        return r.stdout.includes("status: NOERROR") ? r.stdout : undefined;
      }, { timeoutMs: 10_000, what: `${name} SRV` });
      const answers = dig.slice(dig.indexOf(";; ANSWER SECTION:")).split("\n").slice(1).filter((l) => l.includes("SRV"));
      assert.equal(answers.length, 1, dig);
      const f = answers[0]!.trim().split(/\s+/);
      assert.deepEqual([f[1], f[3], f[6], f[7]], ["9", "SRV", "5432", "db-1.node.dc1.consul."], dig);
    }
    // A template resolves by name only (Consul): by ID it is refused, over DNS a SERVFAIL.
    const byId = await fetch(`${agent.http}/v1/query/${out.id}/execute`);
    assert.match(await byId.text(), /templates can only be resolved up by name, not by ID/);
    const idDig = await run(digBin, ["@127.0.0.1", "-p", String(dnsPort), "+time=2", "+tries=1", `${out.id}.query.consul`, "SRV"], { timeoutMs: 15_000 });
    assert.match(idDig.stdout, /status: SERVFAIL/);
    const nx = await run(digBin, ["@127.0.0.1", "-p", String(dnsPort), "+time=2", "+tries=1", "nothing-here.query.consul", "SRV"], { timeoutMs: 15_000 });
    // The python-consul template `db` does not match this name; no catch-all exists.
    assert.match(nx.stdout, /status: NXDOMAIN/);
  });
});
