// HTTPS on the agent (issue #20): certificates made by openssl (testdata/tls),
// checked by real clients: curl, python-consul (Debian python3-consul) and the
// cairn CLI with Consul's TLS flags and environment variables. Client
// certificates are required with verify_incoming; plain HTTP can be turned
// off; certificates reload with `cairn reload`.
import assert from "node:assert/strict";
import { copyFileSync, existsSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { cairn, freePort, root, run, startDevAgent, tempDir, waitFor, type Agent } from "./harness.ts";

const certs = join(root, "testdata/tls");
const f = (name: string) => join(certs, name);
const python = "/usr/bin/python3";
const curlBin = "/usr/bin/curl";

function curl(args: string[]) {
  return run(curlBin, ["-sS", "--max-time", "5", ...args], { timeoutMs: 10_000 });
}

describe("HTTPS with client certificates (verify_incoming), dev agent", { skip: !existsSync(curlBin) && "curl is missing" }, () => {
  let agent: Agent;
  let https: string;
  let addr: string;
  const live = tempDir("cairn-tls-");
  const cfg = join(live.path, "tls.hcl");
  before(async () => {
    // The agent reads its certificate from copies, so the reload test can swap them.
    copyFileSync(f("server.pem"), join(live.path, "server.pem"));
    copyFileSync(f("server-key.pem"), join(live.path, "server-key.pem"));
    const port = await freePort();
    addr = `127.0.0.1:${port}`;
    https = `https://${addr}`;
    writeFileSync(cfg, `
tls {
  defaults {
    ca_file = "${f("ca.pem")}"
    cert_file = "${join(live.path, "server.pem")}"
    key_file = "${join(live.path, "server-key.pem")}"
  }
  https { verify_incoming = true }
}
ports { https = ${port} }
limits { https_handshake_timeout = "500ms" }
`);
    agent = await startDevAgent([`-config-file=${cfg}`]);
  });
  after(async () => {
    await agent?.stop();
    live.remove();
  });

  test("curl with the CA and a client certificate writes and reads; without the certificate or with another CA it is refused", async () => {
    const ok = ["--cacert", f("ca.pem"), "--cert", f("cli.pem"), "--key", f("cli-key.pem")];
    let r = await curl([...ok, "-X", "PUT", "--data", "over tls", `${https}/v1/kv/tls/a`]);
    assert.equal(r.stdout, "true", r.stderr);
    r = await curl([...ok, `${https}/v1/kv/tls/a?raw`]);
    assert.equal(r.stdout, "over tls");
    r = await curl(["--cacert", f("ca.pem"), `${https}/v1/kv/tls/a?raw`]);
    assert.notEqual(r.code, 0, "no client certificate: the handshake fails");
    assert.doesNotMatch(r.stdout, /over tls/);
    r = await curl(["--cacert", f("other-ca.pem"), "--cert", f("cli.pem"), "--key", f("cli-key.pem"), `${https}/v1/kv/tls/a?raw`]);
    assert.equal(r.code, 60, `the agent's certificate is not from that CA: ${r.stderr}`);
    // The plain listener is still there (ports.http was not turned off) and sees the same data.
    r = await curl([`${agent.http}/v1/kv/tls/a?raw`]);
    assert.equal(r.stdout, "over tls");
    assert.match(agent.proc.output(), /HTTPS handshake failed/, "a refused handshake is logged with the peer");
  });

  test("openssl s_client accepts the agent's chain and hands it a client certificate", async () => {
    const r = await run("openssl", ["s_client", "-connect", addr, "-CAfile", f("ca.pem"), "-cert", f("cli.pem"), "-key", f("cli-key.pem"), "-verify_return_error", "-brief", "-ign_eof"], { input: "GET /v1/status/leader HTTP/1.0\r\n\r\n", timeoutMs: 15_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /Verification: OK/);
    assert.match(r.stdout, /HTTP\/1\.[01] 200/);
    const bad = await run("openssl", ["s_client", "-connect", addr, "-CAfile", f("other-ca.pem"), "-verify_return_error", "-brief"], { input: "", timeoutMs: 15_000 });
    assert.notEqual(bad.code, 0, "another CA does not verify the agent's certificate");
  });

  test("limits.https_handshake_timeout: a connection that never starts TLS is closed", async () => {
    const ms = await new Promise<number>((resolve) => {
      const t0 = Date.now();
      const s = connect({ host: "127.0.0.1", port: Number(addr.split(":")[1]) });
      s.resume();
      s.on("close", () => resolve(Date.now() - t0));
      s.on("error", () => {});
      setTimeout(() => resolve(-1), 10_000);
    });
    assert.ok(ms >= 400 && ms < 5_000, `closed after ${ms} ms (node's own default would be 120 s)`);
  });

  test("python-consul with scheme=https, verify=<ca> and cert=(cert, key)", { skip: !existsSync(python) && "python3 is missing" }, async () => {
    const script = `
import consul, sys
c = consul.Consul(host="127.0.0.1", port=${addr.split(":")[1]}, scheme="https", verify="${f("ca.pem")}", cert=("${f("cli.pem")}", "${f("cli-key.pem")}"))
assert c.kv.put("tls/py", "from python") is True
idx, item = c.kv.get("tls/py")
assert item["Value"] == b"from python", item
print("ok")
`;
    const r = await run(python, ["-c", script], { timeoutMs: 20_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /ok/);
  });

  test("cairn CLI: -ca-file/-client-cert/-client-key, CONSUL_* variables, CONSUL_HTTP_SSL_VERIFY=false, -tls-server-name", async () => {
    let r = await cairn(["kv", "put", `-http-addr=${https}`, `-ca-file=${f("ca.pem")}`, `-client-cert=${f("cli.pem")}`, `-client-key=${f("cli-key.pem")}`, "tls/cli", "flags"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const env = { CONSUL_HTTP_ADDR: https, CONSUL_CACERT: f("ca.pem"), CONSUL_CLIENT_CERT: f("cli.pem"), CONSUL_CLIENT_KEY: f("cli-key.pem") };
    r = await cairn(["kv", "get", "tls/cli"], { env });
    assert.equal(r.stdout.trim(), "flags", r.stderr);
    r = await cairn(["kv", "get", "tls/cli"], { env: { ...env, CONSUL_HTTP_ADDR: addr, CONSUL_HTTP_SSL: "true" } });
    assert.equal(r.stdout.trim(), "flags", `CONSUL_HTTP_SSL=true makes a bare address https: ${r.stderr}`);
    r = await cairn(["kv", "get", "tls/cli"], { env: { ...env, CONSUL_CACERT: f("other-ca.pem") } });
    assert.notEqual(r.code, 0, "another CA does not vouch for the agent");
    r = await cairn(["kv", "get", "tls/cli"], { env: { ...env, CONSUL_CACERT: "", CONSUL_HTTP_SSL_VERIFY: "false" } });
    assert.equal(r.stdout.trim(), "flags", `verification off: ${r.stderr}`);
    r = await cairn(["kv", "get", "-tls-server-name=server.dc1.consul", "tls/cli"], { env });
    assert.equal(r.stdout.trim(), "flags", r.stderr);
    r = await cairn(["kv", "get", "-tls-server-name=server.dc2.consul", "tls/cli"], { env });
    assert.notEqual(r.code, 0, "the certificate is not valid for that name");
    r = await cairn(["kv", "get", "tls/cli"], { env: { ...env, CONSUL_CLIENT_CERT: "", CONSUL_CLIENT_KEY: "" } });
    assert.notEqual(r.code, 0, "verify_incoming: no client certificate, no answer");
  });

  test("cairn snapshot save and restore over HTTPS with a client certificate (the upload streams)", async () => {
    const env = { CONSUL_HTTP_ADDR: https, CONSUL_CACERT: f("ca.pem"), CONSUL_CLIENT_CERT: f("cli.pem"), CONSUL_CLIENT_KEY: f("cli-key.pem") };
    const file = join(live.path, "https.snap");
    let r = await cairn(["kv", "put", "tls/snap", "before"], { env });
    assert.equal(r.code, 0, r.stderr);
    r = await cairn(["snapshot", "save", file], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Saved and verified snapshot to index \d+/);
    r = await cairn(["kv", "put", "tls/snap", "after"], { env });
    r = await cairn(["snapshot", "restore", file], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Restored snapshot\n");
    r = await cairn(["kv", "get", "tls/snap"], { env });
    assert.equal(r.stdout.trim(), "before", r.stderr);
  });

  test("cairn reload swaps in new certificate files for new connections", async () => {
    copyFileSync(f("other-server.pem"), join(live.path, "server.pem"));
    copyFileSync(f("other-server-key.pem"), join(live.path, "server-key.pem"));
    const r = await cairn(["reload", `-http-addr=${agent.httpAddr}`]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const client = ["--cert", f("cli.pem"), "--key", f("cli-key.pem"), `${https}/v1/kv/tls/a?raw`];
    await waitFor(async () => (await curl(["--cacert", f("other-ca.pem"), ...client])).stdout === "over tls", { timeoutMs: 5_000, what: "the new certificate" });
    assert.equal((await curl(["--cacert", f("ca.pem"), ...client])).code, 60, "the old CA no longer vouches for the agent");
  });
});

describe("HTTPS only: ports.http = -1", { skip: !existsSync(curlBin) && "curl is missing" }, () => {
  test("the agent answers on HTTPS and nothing listens on the HTTP port", async () => {
    const port = await freePort();
    const agent = await startDevAgent([
      "-http-port=-1",
      `-https-port=${port}`,
      `-hcl=tls { defaults { ca_file = "${f("ca.pem")}", cert_file = "${f("server.pem")}", key_file = "${f("server-key.pem")}" } }`,
    ], { ready: false });
    try {
      await waitFor(async () => (await curl(["--cacert", f("ca.pem"), `https://127.0.0.1:${port}/v1/status/leader`])).stdout.includes(":"), { timeoutMs: 20_000, what: "a leader over HTTPS" });
      const r = await curl([`${agent.http}/v1/status/leader`]);
      assert.equal(r.code, 7, "connection refused on the HTTP port");
      assert.match(agent.proc.output(), /HTTP: -1, HTTPS: \d+/);
    } finally {
      await agent.stop();
    }
  });

  test("a certificate that does not load stops the agent with the file named", async () => {
    const r = await cairn(["agent", "-dev", `-https-port=${await freePort()}`, `-http-port=${await freePort()}`, "-dns-port=-1",
      `-hcl=tls { defaults { cert_file = "${f("server.pem")}", key_file = "${f("client-key.pem")}" } }`], { timeoutMs: 20_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stdout + r.stderr, /tls\.https: the certificate .*server\.pem, key .*client-key\.pem .*do not load/);
  });
});
