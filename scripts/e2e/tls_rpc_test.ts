// Server RPC over TLS end to end (issue #20): a 3-server cluster and a client
// agent with certificates made by `cairn tls ca create` / `tls cert create`.
// The cluster is rolled from plaintext to mutual TLS without downtime as
// Consul documents it (certificates first, verify_outgoing, then
// verify_incoming), one server restart at a time, while a writer keeps
// writing: every acknowledged write is there at the end. Then plaintext RPC
// is refused, a client agent with its client certificate works, and
// openssl accepts the chain.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { after, test } from "node:test";
import { cairn, getJson, makeCluster, run, waitFor, waitForLeader, type Agent, type Cluster, type ServerSpec } from "./harness.ts";

let cluster: Cluster | undefined;
let client: Agent | undefined;
after(async () => {
  await client?.stop();
  await cluster?.stopAll();
  if (process.env.KEEP_E2E_DIRS) console.log(`kept ${cluster?.root.path}`);
  else cluster?.root.remove();
});

async function put(c: Cluster, s: ServerSpec, key: string, value: string): Promise<boolean> {
  try {
    const r = await fetch(c.url(s, `/v1/kv/${key}`), { method: "PUT", body: value, signal: AbortSignal.timeout(10_000) });
    return r.ok && (await r.text()) === "true";
  } catch {
    return false;
  }
}

test("rpc TLS: roll a live cluster from plaintext to mutual TLS, losing nothing; then plaintext is refused", { timeout: 240_000 }, async () => {
  const c = (cluster = await makeCluster(3, { prefix: "cairn-tls-rpc-e2e-" }));
  const certs = join(c.root.path, "certs");
  mkdirSync(certs);
  for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server"], ["tls", "cert", "create", "-client"]]) {
    const r = await cairn(args, { timeoutMs: 20_000, cwd: certs });
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
  }
  const ca = join(certs, "consul-agent-ca.pem");
  const openssl = await run("openssl", ["verify", "-CAfile", ca, join(certs, "dc1-server-consul-0.pem"), join(certs, "dc1-client-consul-0.pem")], { timeoutMs: 10_000 });
  assert.equal(openssl.code, 0, openssl.stdout + openssl.stderr);

  const stage = (rpc: Record<string, unknown>) => writeFileSync(c.configFile, JSON.stringify({
    performance: { raft_multiplier: 1 },
    tls: {
      defaults: { ca_file: ca, cert_file: join(certs, "dc1-server-consul-0.pem"), key_file: join(certs, "dc1-server-consul-0-key.pem") },
      internal_rpc: rpc,
    },
  }));
  // Step 0: certificates everywhere, TLS accepted but not used or required.
  stage({});
  for (const s of c.servers) c.start(s);
  await waitForLeader(c, c.servers);

  // A writer through every server in turn, for the whole roll.
  const acked: string[] = [];
  let failed = 0;
  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      const s = c.servers[i % 3]!;
      if (await put(c, s, `roll/k${i}`, `v${i}`)) acked.push(`roll/k${i}`);
      else failed++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const restartAll = async () => {
    for (const s of c.servers) {
      await c.kill(s, "SIGTERM");
      c.start(s);
      await waitFor(async () => (await getJson(c.url(s, "/v1/status/leader"))) !== undefined, { timeoutMs: 30_000, what: `${s.name} back` });
      await waitForLeader(c, c.servers, { timeoutMs: 30_000 });
    }
  };
  const ackedByStage: number[] = [];
  const settle = async () => {
    const before = acked.length;
    await waitFor(() => acked.length >= before + 10, { timeoutMs: 30_000, what: "ten more acknowledged writes" });
    ackedByStage.push(acked.length - before);
  };
  await settle();
  // Step 1: dial with TLS (and check server.dc1.consul), still accept plaintext.
  stage({ verify_outgoing: true, verify_server_hostname: true });
  await restartAll();
  await settle();
  // Step 2: refuse plaintext and certificate-less connections.
  stage({ verify_outgoing: true, verify_server_hostname: true, verify_incoming: true });
  await restartAll();
  await settle();
  stop = true;
  await writer;
  // A quiet machine rolls in a few seconds: what matters is that writes were acknowledged in every stage.
  assert.ok(ackedByStage.every((n) => n > 0), `the writer kept going through the roll (acknowledged per stage: ${ackedByStage.join(", ")}; ${failed} not acknowledged)`);

  // Every acknowledged write is there.
  const leader = await waitForLeader(c, c.servers);
  const keys = await waitFor(async () => (await getJson(c.url(leader, "/v1/kv/roll/?keys&consistent"), 10_000)) as string[] | undefined, { timeoutMs: 10_000, what: "the keys" });
  const have = new Set(keys);
  const lost = acked.filter((k) => !have.has(k));
  assert.deepEqual(lost, [], `acknowledged writes lost: ${lost.length} of ${acked.length}`);

  // Plaintext RPC to a server: refused and logged with the peer.
  const s1 = c.servers[0]!;
  const closed = await new Promise<boolean>((resolve) => {
    const sock = connect({ host: s1.addr, port: s1.server }, () => sock.write(Uint8Array.from([0xca, 0, 0, 0, 1, 0x90])));
    sock.on("close", () => resolve(true));
    sock.on("error", () => {});
    setTimeout(() => resolve(false), 5_000);
  });
  assert.ok(closed, "the server closes a plaintext RPC connection");
  await waitFor(async () => /non-TLS connection attempted with verify_incoming set/.test(c.output(s1)), { timeoutMs: 5_000, what: "the refusal in the log" });

  // A client agent with its client certificate forwards through TLS.
  const clientCfg = join(c.root.path, "client.json");
  writeFileSync(clientCfg, JSON.stringify({
    tls: {
      defaults: { ca_file: ca, cert_file: join(certs, "dc1-client-consul-0.pem"), key_file: join(certs, "dc1-client-consul-0-key.pem") },
      internal_rpc: { verify_outgoing: true, verify_server_hostname: true },
    },
  }));
  client = await c.startClient("c1", { args: [`-config-file=${clientCfg}`] });
  const ok = await waitFor(async () => {
    const r = await fetch(`${client!.http}/v1/kv/from-client`, { method: "PUT", body: "over tls" }).catch(() => undefined);
    return r?.ok ? true : undefined;
  }, { timeoutMs: 30_000, what: "a write through the TLS client" });
  assert.ok(ok);
  const got = await cairn(["kv", "get", `-http-addr=${client.httpAddr}`, "from-client"]);
  assert.equal(got.stdout.trim(), "over tls", got.stderr);
});
