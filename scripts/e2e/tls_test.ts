// `cairn tls ca create` / `cairn tls cert create` of the built binary in a
// temporary working directory, read back by OpenSSL and used by node:tls.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { connect, createServer } from "node:tls";
import { after, test } from "node:test";
import { startCairn, tempDir } from "./harness.ts";

const dir = tempDir("cairn-e2e-tls-");
after(() => dir.remove());

async function cairnIn(...args: string[]): Promise<{ code: number | string; output: string }> {
  const proc = startCairn(args, { cwd: dir.path });
  const code = await proc.exited;
  return { code, output: proc.output() };
}

function openssl(...args: string[]): { ok: boolean; out: string } {
  const r = spawnSync("openssl", args, { cwd: dir.path, encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;

test("e2e tls: a CA, server/client/cli certificates with counting file names, verified by OpenSSL", { skip: !hasOpenssl && "no openssl" }, async () => {
  const ca = await cairnIn("tls", "ca", "create");
  assert.deepEqual(ca, { code: 0, output: "==> Saved consul-agent-ca.pem\n==> Saved consul-agent-ca-key.pem\n" });
  assert.equal(statSync(join(dir.path, "consul-agent-ca-key.pem")).mode & 0o777, 0o600);
  assert.deepEqual(await cairnIn("tls", "ca", "create"), { code: 1, output: "consul-agent-ca.pem already exists.\n" });

  const s0 = await cairnIn("tls", "cert", "create", "-server");
  assert.equal(s0.code, 0, s0.output);
  assert.match(s0.output, /^==> WARNING: Server Certificates grants authority to become a\n[\s\S]*==> Using consul-agent-ca\.pem and consul-agent-ca-key\.pem\n==> Saved dc1-server-consul-0\.pem\n==> Saved dc1-server-consul-0-key\.pem\n$/);
  const s1 = await cairnIn("tls", "cert", "create", "-server", "-node", "n1");
  assert.match(s1.output, /==> Saved dc1-server-consul-1\.pem\n==> Saved dc1-server-consul-1-key\.pem\n$/);
  assert.match((await cairnIn("tls", "cert", "create", "-client")).output, /==> Saved dc1-client-consul-0\.pem\n/);
  assert.match((await cairnIn("tls", "cert", "create", "-cli")).output, /==> Saved dc1-cli-consul-0\.pem\n/);

  for (const f of ["dc1-server-consul-0.pem", "dc1-server-consul-1.pem", "dc1-client-consul-0.pem", "dc1-cli-consul-0.pem"]) {
    const v = openssl("verify", "-CAfile", "consul-agent-ca.pem", f);
    assert.ok(v.ok, v.out);
  }
  assert.ok(openssl("verify", "-purpose", "sslserver", "-CAfile", "consul-agent-ca.pem", "dc1-server-consul-0.pem").ok);
  assert.ok(openssl("verify", "-purpose", "sslclient", "-CAfile", "consul-agent-ca.pem", "dc1-client-consul-0.pem").ok);
  assert.match(openssl("x509", "-noout", "-in", "dc1-server-consul-1.pem", "-checkhost", "n1.server.dc1.consul").out, /does match/);
  assert.match(openssl("x509", "-noout", "-in", "dc1-client-consul-0.pem", "-checkhost", "server.dc1.consul").out, /does NOT match/);
  assert.ok(openssl("ec", "-in", "dc1-server-consul-0-key.pem", "-noout", "-check").ok);
});

test("e2e tls: name constraints are in the CA and refuse names outside them", { skip: !hasOpenssl && "no openssl" }, async () => {
  const ca = await cairnIn("tls", "ca", "create", "-domain", "example", "-name-constraint", "-additional-name-constraint", "ui.example.com");
  assert.equal(ca.code, 0, ca.output);
  const text = openssl("x509", "-noout", "-text", "-in", "example-agent-ca.pem").out;
  assert.match(text, /X509v3 Name Constraints: critical\n\s+Permitted:\n\s+DNS:ui\.example\.com\n\s+DNS:example\n\s+DNS:localhost\n/);
  const ok = await cairnIn("tls", "cert", "create", "-server", "-domain", "example");
  assert.equal(ok.code, 0, ok.output);
  assert.ok(openssl("verify", "-CAfile", "example-agent-ca.pem", "dc1-server-example-0.pem").ok);
  const bad = await cairnIn("tls", "cert", "create", "-server", "-domain", "example", "-additional-dnsname", "db.other.net");
  assert.equal(bad.code, 1);
  assert.match(bad.output, /DNS name "db\.other\.net" is not permitted by any constraint\n$/);
});

test("e2e tls: node:tls connects with the written server and client certificates, both sides verified", async () => {
  const read = (f: string) => readFileSync(join(dir.path, f), "utf8");
  const ca = read("consul-agent-ca.pem");
  const server = createServer({ cert: read("dc1-server-consul-0.pem"), key: read("dc1-server-consul-0-key.pem"), ca, requestCert: true, rejectUnauthorized: true }, (sock) => sock.end("ok"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const port = (server.address() as AddressInfo).port;
    const reply = await new Promise<string>((resolve, reject) => {
      const c = connect({ host: "127.0.0.1", port, servername: "server.dc1.consul", ca, cert: read("dc1-client-consul-0.pem"), key: read("dc1-client-consul-0-key.pem") });
      let data = "";
      c.on("data", (d: Buffer) => (data += d.toString()));
      c.on("end", () => resolve(data));
      c.on("error", reject);
    });
    assert.equal(reply, "ok");
  } finally {
    server.close();
  }
});
