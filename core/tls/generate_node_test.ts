// Certificates issued by core/tls read back by OpenSSL (Debian's `openssl`
// binary: text, verify, purposes, host checks, name constraints) and used by
// node:tls for a mutually verified connection, as Consul's agents use them.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash, createPublicKey, X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:tls";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { generateCa, generateCert, parseCaPem, verifyCert } from "./generate_node.ts";
import { parseCertificate, pemDecodeFirst } from "./x509.ts";
import type { ExtKeyUsage } from "./x509.ts";

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;
const dir = mkdtempSync(join(tmpdir(), "cairn-tls-"));
after(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(pem: string): string {
  const path = join(dir, `f${n++}.pem`);
  writeFileSync(path, pem);
  return path;
}

function openssl(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync("openssl", args, { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

const NOW = Date.now();
const ca = generateCa({ days: 1825, nowMs: NOW });

type Kind = "server" | "client" | "cli";
const USAGE: Record<Kind, ExtKeyUsage[]> = { server: ["serverAuth", "clientAuth"], client: ["clientAuth", "serverAuth"], cli: [] };

function leaf(kind: Kind, opts: { ca?: { certPem: string; keyPem: string }; dnsNames?: string[]; ips?: Uint8Array[]; name?: string; nowMs?: number } = {}) {
  const c = opts.ca ?? ca;
  const name = opts.name ?? `${kind}.dc1.consul`;
  return generateCert({
    caPem: c.certPem,
    caKeyPem: c.keyPem,
    name,
    days: 365,
    nowMs: opts.nowMs ?? NOW,
    dnsNames: opts.dnsNames ?? [name, "localhost"],
    ipAddresses: opts.ips ?? (kind === "cli" ? [] : [Uint8Array.of(127, 0, 0, 1)]),
    extKeyUsage: USAGE[kind],
  });
}

test("tls: the CA reads back in OpenSSL with Consul's subject and extensions", { skip: !hasOpenssl && "no openssl" }, () => {
  const text = execFileSync("openssl", ["x509", "-noout", "-text", "-in", file(ca.certPem)], { encoding: "utf8" });
  assert.match(text, /Version: 3 \(0x2\)/);
  assert.match(text, /Signature Algorithm: ecdsa-with-SHA256/);
  assert.match(text, /Subject: C ?= ?US, ST ?= ?CA, L ?= ?San Francisco, street ?= ?101 Second Street, postalCode ?= ?94105, O ?= ?HashiCorp Inc\., CN ?= ?Consul Agent CA \d+/);
  assert.match(text, /NIST CURVE: P-256/);
  assert.match(text, /X509v3 Key Usage: critical\n\s+Digital Signature, Certificate Sign, CRL Sign/);
  assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:TRUE\n/);
  assert.doesNotMatch(text, /Name Constraints/);
  // The CN's number is the serial, in decimal.
  const serialHex = /Serial Number:\s*\n?\s*([0-9a-f:]+)/.exec(text)![1]!.replace(/:/g, "");
  assert.match(text, new RegExp(`CN ?= ?Consul Agent CA ${BigInt(`0x${serialHex}`).toString(10)}\\b`));
  // Validity: 1825 days from now, to the second.
  const x = new X509Certificate(ca.certPem);
  assert.equal(Date.parse(x.validTo) - Date.parse(x.validFrom), 1825 * 86_400_000);
  assert.ok(Math.abs(Date.parse(x.validFrom) - NOW) < 1000);
  // Key ids: SHA-256 of the SubjectPublicKeyInfo, the same in both.
  const spki = createPublicKey(ca.keyPem).export({ type: "spki", format: "der" });
  const id = createHash("sha256").update(spki).digest("hex").toUpperCase().match(/../g)!.join(":");
  assert.match(text, new RegExp(`Subject Key Identifier: ?\\n\\s+${id}\\n`));
  assert.match(text, new RegExp(`Authority Key Identifier: ?\\n\\s+(keyid:)?${id}\\n`));
  // Self-signed and valid as a root.
  assert.ok(openssl(["verify", "-CAfile", file(ca.certPem), file(ca.certPem)]).ok);
});

test("tls: keys are SEC1 \"EC PRIVATE KEY\" P-256 PEM, as Go's MarshalECPrivateKey", { skip: !hasOpenssl && "no openssl" }, () => {
  assert.match(ca.keyPem, /^-----BEGIN EC PRIVATE KEY-----\n/);
  const path = file(ca.keyPem);
  const check = openssl(["ec", "-in", path, "-noout", "-check"]);
  assert.ok(check.ok, check.out);
  assert.match(check.out, /EC Key valid/);
  const asn1 = execFileSync("openssl", ["asn1parse", "-in", path], { encoding: "utf8" });
  assert.match(asn1, /INTEGER\s+:01/); // ecPrivkeyVer1
  assert.match(asn1, /OBJECT\s+:prime256v1/); // [0] parameters
  assert.match(asn1, /BIT STRING/); // [1] publicKey
});

test("tls: server, client and cli certificates verify against the CA with their purposes and names", { skip: !hasOpenssl && "no openssl" }, () => {
  const caPath = file(ca.certPem);
  const server = leaf("server", { dnsNames: ["n1.server.dc1.consul", "server.dc1.consul", "localhost"] });
  const client = leaf("client");
  const cli = leaf("cli");
  const s = file(server.certPem);
  const c = file(client.certPem);
  const l = file(cli.certPem);

  const sText = execFileSync("openssl", ["x509", "-noout", "-text", "-in", s], { encoding: "utf8" });
  assert.match(sText, /Subject: CN ?= ?server\.dc1\.consul\n/);
  assert.match(sText, /X509v3 Key Usage: critical\n\s+Digital Signature, Key Encipherment\n/);
  assert.match(sText, /X509v3 Extended Key Usage: ?\n\s+TLS Web Server Authentication, TLS Web Client Authentication\n/);
  assert.match(sText, /X509v3 Basic Constraints: critical\n\s+CA:FALSE\n/);
  assert.match(sText, /DNS:n1\.server\.dc1\.consul, DNS:server\.dc1\.consul, DNS:localhost, IP Address:127\.0\.0\.1\n/);
  const cText = execFileSync("openssl", ["x509", "-noout", "-text", "-in", c], { encoding: "utf8" });
  assert.match(cText, /TLS Web Client Authentication, TLS Web Server Authentication\n/);
  assert.match(cText, /DNS:client\.dc1\.consul, DNS:localhost, IP Address:127\.0\.0\.1\n/);
  const lText = execFileSync("openssl", ["x509", "-noout", "-text", "-in", l], { encoding: "utf8" });
  assert.doesNotMatch(lText, /Extended Key Usage/);
  assert.match(lText, /DNS:cli\.dc1\.consul, DNS:localhost\n/);
  // The leaf's Authority Key Identifier is the CA's Subject Key Identifier.
  assert.deepEqual(parseCertificate(pemDecodeFirst(server.certPem)!.der).extensions.get("2.5.29.35")!.value.subarray(4), parseCaPem(ca.certPem).subjectKeyId);

  for (const p of [s, c, l]) assert.ok(openssl(["verify", "-CAfile", caPath, p]).ok, p);
  assert.ok(openssl(["verify", "-purpose", "sslserver", "-CAfile", caPath, s]).ok);
  assert.ok(openssl(["verify", "-purpose", "sslclient", "-CAfile", caPath, s]).ok);
  assert.ok(openssl(["verify", "-purpose", "sslclient", "-CAfile", caPath, c]).ok);
  assert.ok(openssl(["verify", "-purpose", "sslserver", "-CAfile", caPath, c]).ok);
  assert.match(openssl(["x509", "-noout", "-in", s, "-checkhost", "server.dc1.consul"]).out, /does match/);
  assert.match(openssl(["x509", "-noout", "-in", s, "-checkhost", "n1.server.dc1.consul"]).out, /does match/);
  assert.match(openssl(["x509", "-noout", "-in", s, "-checkip", "127.0.0.1"]).out, /does match/);
  assert.match(openssl(["x509", "-noout", "-in", c, "-checkhost", "server.dc1.consul"]).out, /does NOT match/);
  // A certificate from another CA does not verify.
  const other = generateCa({ days: 10, nowMs: NOW });
  assert.equal(openssl(["verify", "-CAfile", caPath, file(leaf("server", { ca: other }).certPem)]).ok, false);
});

test("tls: name constraints permit the domain and localhost only, in OpenSSL and in verifyCert", { skip: !hasOpenssl && "no openssl" }, () => {
  const nc = generateCa({ days: 30, nowMs: NOW, permittedDnsDomains: ["ui.example.com", "consul", "localhost"] });
  const ncPath = file(nc.certPem);
  const text = execFileSync("openssl", ["x509", "-noout", "-text", "-in", ncPath], { encoding: "utf8" });
  assert.match(text, /X509v3 Name Constraints: critical\n\s+Permitted:\n\s+DNS:ui\.example\.com\n\s+DNS:consul\n\s+DNS:localhost\n/);
  const good = leaf("server", { ca: nc });
  assert.ok(openssl(["verify", "-CAfile", ncPath, file(good.certPem)]).ok);
  verifyCert({ caPem: nc.certPem, certPem: good.certPem, name: "server.dc1.consul", nowMs: NOW });
  const bad = leaf("server", { ca: nc, name: "server.dc1.nomad" });
  const r = openssl(["verify", "-CAfile", ncPath, file(bad.certPem)]);
  assert.equal(r.ok, false);
  assert.match(r.out, /permitted subtree violation/);
  assert.throws(
    () => verifyCert({ caPem: nc.certPem, certPem: bad.certPem, name: "server.dc1.nomad", nowMs: NOW }),
    { message: 'x509: a root or intermediate certificate is not authorized to sign for this name: DNS name "server.dc1.nomad" is not permitted by any constraint' },
  );
});

test("tls: verifyCert refuses a foreign CA, a wrong host, an expired certificate and a CA key that is not the CA's", () => {
  const server = leaf("server");
  verifyCert({ caPem: ca.certPem, certPem: server.certPem, name: "server.dc1.consul", nowMs: NOW });
  const other = generateCa({ days: 10, nowMs: NOW });
  assert.throws(() => verifyCert({ caPem: other.certPem, certPem: server.certPem, name: "server.dc1.consul", nowMs: NOW }), /signed by unknown authority/);
  assert.throws(() => verifyCert({ caPem: ca.certPem, certPem: server.certPem, name: "server.dc2.consul", nowMs: NOW }), /is valid for n?.*server\.dc1\.consul, localhost, not server\.dc2\.consul/);
  assert.throws(() => verifyCert({ caPem: ca.certPem, certPem: server.certPem, name: "server.dc1.consul", nowMs: NOW + 400 * 86_400_000 }), /has expired or is not yet valid/);
  assert.throws(
    () => generateCert({ caPem: ca.certPem, caKeyPem: other.keyPem, name: "x", days: 1, nowMs: NOW, dnsNames: [], ipAddresses: [], extKeyUsage: [] }),
    /provided PrivateKey doesn't match parent's PublicKey/,
  );
  assert.throws(
    () => generateCert({ caPem: ca.keyPem, caKeyPem: ca.keyPem, name: "x", days: 1, nowMs: NOW, dnsNames: [], ipAddresses: [], extKeyUsage: [] }),
    { message: "failed to parse CA: first PEM-block should be CERTIFICATE type" },
  );
  assert.throws(
    () => generateCert({ caPem: ca.certPem, caKeyPem: ca.certPem, name: "x", days: 1, nowMs: NOW, dnsNames: [], ipAddresses: [], extKeyUsage: [] }),
    { message: "unknown PEM block type for signing key: CERTIFICATE" },
  );
});

test("tls: an RSA CA key (as an operator's own CA may have) signs with sha256WithRSAEncryption", { skip: !hasOpenssl && "no openssl" }, () => {
  const keyPath = join(dir, "rsa-key.pem");
  const caPath = join(dir, "rsa-ca.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyPath, "-out", caPath, "-days", "2", "-subj", "/CN=Own CA"], { stdio: "ignore" });
  const { readFileSync } = process.getBuiltinModule("node:fs");
  const own = { certPem: readFileSync(caPath, "utf8"), keyPem: readFileSync(keyPath, "utf8") };
  const now = Date.now();
  const server = leaf("server", { ca: own, nowMs: now });
  const s = file(server.certPem);
  assert.ok(openssl(["verify", "-CAfile", caPath, s]).ok);
  assert.match(execFileSync("openssl", ["x509", "-noout", "-text", "-in", s], { encoding: "utf8" }), /Signature Algorithm: sha256WithRSAEncryption/);
  verifyCert({ caPem: own.certPem, certPem: server.certPem, name: "server.dc1.consul", nowMs: now });
});

/** One node:tls connection; resolves with what each side saw. */
function handshake(opts: { serverCert: { certPem: string; keyPem: string }; clientCert?: { certPem: string; keyPem: string }; servername: string; serverCa?: string }): Promise<{ clientError?: string; serverAuthorized?: boolean; serverPeerCn?: string }> {
  return new Promise((resolve) => {
    let serverAuthorized: boolean | undefined;
    let serverPeerCn: string | undefined;
    const server = createServer({
      cert: opts.serverCert.certPem,
      key: opts.serverCert.keyPem,
      ca: opts.serverCa ?? ca.certPem,
      requestCert: true,
      rejectUnauthorized: false,
    }, (sock) => {
      serverAuthorized = sock.authorized;
      const cn = sock.getPeerCertificate().subject?.CN;
      serverPeerCn = Array.isArray(cn) ? cn.join(",") : cn;
      sock.end("hello");
    });
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port;
      const client = connect({
        host: "127.0.0.1",
        port,
        servername: opts.servername,
        ca: ca.certPem,
        ...(opts.clientCert ? { cert: opts.clientCert.certPem, key: opts.clientCert.keyPem } : {}),
      });
      const done = (clientError?: string) => {
        client.destroy();
        server.close();
        resolve({ clientError, serverAuthorized, serverPeerCn });
      };
      client.on("data", () => {});
      client.on("end", () => done());
      client.on("error", (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    });
  });
}

test("tls: node:tls connects with a server and a client certificate, both sides verified", async () => {
  const ok = await handshake({ serverCert: leaf("server"), clientCert: leaf("client"), servername: "server.dc1.consul" });
  assert.deepEqual(ok, { clientError: undefined, serverAuthorized: true, serverPeerCn: "client.dc1.consul" });
  // verify_server_hostname: a client certificate cannot pose as a server.
  const posing = await handshake({ serverCert: leaf("client"), clientCert: leaf("client"), servername: "server.dc1.consul" });
  assert.equal(posing.clientError, "ERR_TLS_CERT_ALTNAME_INVALID");
  // A client certificate from another CA is not authorized by the server.
  const other = generateCa({ days: 10, nowMs: NOW });
  const foreign = await handshake({ serverCert: leaf("server"), clientCert: leaf("client", { ca: other }), servername: "server.dc1.consul" });
  assert.equal(foreign.serverAuthorized, false);
  // The cli certificate has no extended key usage: any purpose, as Go's.
  const cli = await handshake({ serverCert: leaf("server"), clientCert: leaf("cli"), servername: "localhost" });
  assert.deepEqual(cli, { clientError: undefined, serverAuthorized: true, serverPeerCn: "cli.dc1.consul" });
});
