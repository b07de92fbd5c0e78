// End-to-end catalog on a real cluster: one server (-server
// -bootstrap-expect=1, data dir) and two clients joined to it, all dist/cairn
// processes on loopback with free ports. The leader puts every member in the
// catalog with serfHealth (and the server's `consul` service); a service
// registered on one client is read from the other; its TTL check expires to
// critical; anti-entropy puts back a catalog entry deleted behind the agent's
// back; kill -9 of a client turns its serfHealth critical and invalidates its
// sessions (releasing their locks), so a `cairn lock` waiting through the
// other client takes over while the one through the dead agent stops its child.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cairnBin, startAgent, startProcess, waitFor, type Agent } from "./harness.ts";

async function getJson<T>(url: string): Promise<T> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

async function put(url: string, body?: unknown): Promise<string> {
  const r = await fetch(url, { method: "PUT", body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok) throw new Error(`PUT ${url}: ${r.status} ${text}`);
  return text;
}

interface CheckJson { Node: string; CheckID: string; Status: string; Output: string; ServiceID: string }

async function serfStatus(via: Agent, node: string): Promise<string | undefined> {
  const checks = await getJson<CheckJson[]>(`${via.http}/v1/health/node/${node}`);
  return checks.find((c) => c.CheckID === "serfHealth")?.Status;
}

function tail(a: Agent): string {
  return `\n--- ${a.name} (tail) ---\n${a.proc.output().slice(-3000)}`;
}

test("cluster catalog: server + two clients, serfHealth, cross-agent reads, TTL expiry, anti-entropy repair, kill -9 invalidates sessions", { timeout: 180_000 }, async () => {
  const srv = await startAgent("srv", { server: true, args: ["-bootstrap-expect=1"], ready: "leader" });
  // Short anti-entropy period on the clients so the repair is seen in seconds (Consul's ae_interval is 1m).
  const env = { CAIRN_AE_INTERVAL_MS: "1000" };
  const c1 = await startAgent("c1", { args: [`-join=${srv.serfAddr}`], env });
  const c2 = await startAgent("c2", { args: [`-join=${srv.serfAddr}`], env });

  // 1. Leader reconcile: every member with a passing serfHealth; the server's consul service.
  await waitFor(async () => {
    for (const n of ["srv", "c1", "c2"]) if ((await serfStatus(c2, n)) !== "passing") return false;
    return true;
  }, { timeoutMs: 30_000, what: "serfHealth passing for srv, c1, c2" }).catch((err) => { throw new Error(`${String(err)}${tail(srv)}${tail(c2)}`); });
  const consul = await getJson<Array<{ Node: string; ServicePort: number }>>(`${c1.http}/v1/catalog/service/consul`);
  assert.deepEqual(consul.map((s) => s.Node), ["srv"]);
  const nodes = await getJson<Array<{ Node: string; ID: string }>>(`${c1.http}/v1/catalog/nodes`);
  assert.deepEqual(nodes.map((n) => n.Node).sort(), ["c1", "c2", "srv"]);
  assert.ok(nodes.every((n) => /^[0-9a-f-]{36}$/.test(n.ID)), `node IDs from the id tag: ${JSON.stringify(nodes)}`);

  // 2. Register on c1, read on c2.
  await put(`${c1.http}/v1/agent/service/register`, { Name: "web", ID: "web1", Port: 8080, Tags: ["v1"], Check: { CheckID: "web-ttl", Name: "web ttl", TTL: "3s" } });
  await put(`${c1.http}/v1/agent/check/pass/web-ttl?note=up`);
  const passing = await waitFor(async () => {
    const e = await getJson<Array<{ Node: { Node: string }; Service: { ID: string; Port: number } }>>(`${c2.http}/v1/health/service/web?passing`);
    return e.length === 1 ? e : undefined;
  }, { what: "web passing, read through c2" });
  assert.equal(passing[0]!.Node.Node, "c1");
  assert.equal(passing[0]!.Service.Port, 8080);

  // 3. TTL expiry: no more passes, the check goes critical everywhere.
  await waitFor(async () => {
    const checks = await getJson<CheckJson[]>(`${c2.http}/v1/health/checks/web`);
    return checks.some((c) => c.CheckID === "web-ttl" && c.Status === "critical");
  }, { timeoutMs: 15_000, what: "TTL check critical after expiry" });
  assert.deepEqual(await getJson<unknown[]>(`${c2.http}/v1/health/service/web?passing`), []);

  // 4. Anti-entropy: delete the service behind c1's back; c1 puts it back.
  await put(`${c2.http}/v1/catalog/deregister`, { Node: "c1", ServiceID: "web1" });
  assert.deepEqual(await getJson<unknown[]>(`${c2.http}/v1/catalog/service/web`), [], "deleted from the catalog");
  await waitFor(async () => (await getJson<unknown[]>(`${c2.http}/v1/catalog/service/web`)).length === 1, { timeoutMs: 20_000, what: "anti-entropy re-registers web" })
    .catch((err) => { throw new Error(`${String(err)}${tail(c1)}`); });

  // 5. A session of c1 holding a lock; kill -9 c1 → serfHealth critical → session invalidated, lock released.
  const sid = (JSON.parse(await put(`${c1.http}/v1/session/create`, { Name: "c1-lock", LockDelay: "0s" })) as { ID: string }).ID;
  assert.equal((await put(`${c1.http}/v1/kv/service/leader?acquire=${sid}`, "c1")).trim(), "true");
  // `cairn lock` through c1 holds e2e/lock; the same lock through c2 waits for it.
  const holder = startProcess(cairnBin, ["lock", `-http-addr=${c1.http}`, "e2e/lock", "echo c1-held; sleep 60"]);
  await waitFor(() => holder.output().includes("c1-held"), { what: "cairn lock holding through c1" });
  const waiter = startProcess(cairnBin, ["lock", `-http-addr=${c2.http}`, "e2e/lock", 'echo "c2-held $CONSUL_LOCK_HELD"']);
  await c1.proc.kill("SIGKILL");
  await waitFor(async () => (await serfStatus(c2, "c1")) === "critical", { timeoutMs: 60_000, what: "c1 serfHealth critical after kill -9" })
    .catch((err) => { throw new Error(`${String(err)}${tail(srv)}`); });
  const serf = (await getJson<CheckJson[]>(`${c2.http}/v1/health/node/c1`)).find((c) => c.CheckID === "serfHealth");
  assert.equal(serf?.Output, "Agent not live or unreachable");
  await waitFor(async () => (await getJson<unknown[]>(`${c2.http}/v1/session/node/c1`)).length === 0, { what: "c1's session invalidated" });
  const kv = await getJson<Array<{ Session?: string }>>(`${c2.http}/v1/kv/service/leader`);
  assert.equal(kv[0]?.Session ?? "", "", "lock released with the session");
  // The holder lost its agent: it gives up the lock and stops its child; the waiter gets it (after the lock delay).
  assert.equal(await holder.exited, 1, holder.output());
  assert.match(holder.output(), /Lock lost, killing child/);
  const got = await Promise.race([waiter.exited, new Promise((r) => setTimeout(() => r("timeout"), 45_000))]);
  assert.equal(got, 0, `waiter: ${waiter.output()}`);
  assert.match(waiter.output(), /c2-held true/);
  // The failed node stays in the catalog (critical) until it leaves or is reaped.
  assert.ok((await getJson<Array<{ Node: string }>>(`${c2.http}/v1/catalog/nodes`)).some((n) => n.Node === "c1"));
});
