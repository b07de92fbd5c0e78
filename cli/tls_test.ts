// `cairn tls ca create` and `cairn tls cert create` in a temporary working
// directory: Consul's file names, console lines, refusals and the names in
// the certificates (consul command/tls/*/create/*_test.go cases).
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { parseCertificate, pemDecodeFirst } from "../core/tls/x509.ts";
import { testIo } from "./_testing.ts";
import { runCli } from "./run.ts";

let dir = "";
const home = process.cwd();
before(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-tls-cli-"));
  process.chdir(dir);
});
after(() => {
  process.chdir(home);
  rmSync(dir, { recursive: true, force: true });
});

async function cli(...argv: string[]) {
  const io = testIo();
  const code = await runCli(argv, io);
  return { code, out: io.stdoutText, err: io.stderrText };
}

function cert(path: string) {
  const pem = readFileSync(join(dir, path), "utf8");
  return { x: new X509Certificate(pem), info: parseCertificate(pemDecodeFirst(pem)!.der) };
}

test("tls: ca create writes consul-agent-ca.pem and its key, then refuses to overwrite them", async () => {
  const r = await cli("tls", "ca", "create");
  assert.deepEqual(r, { code: 0, out: "==> Saved consul-agent-ca.pem\n==> Saved consul-agent-ca-key.pem\n", err: "" });
  assert.equal(statSync(join(dir, "consul-agent-ca-key.pem")).mode & 0o777, 0o600);
  const ca = cert("consul-agent-ca.pem");
  assert.equal(ca.x.ca, true);
  assert.match(ca.x.subject, /^C=US\nST=CA\nL=San Francisco\nstreet=101 Second Street\npostalCode=94105\nO=HashiCorp Inc\.\nCN=Consul Agent CA \d+$/);
  assert.equal(ca.info.nameConstraints, undefined);
  const again = await cli("tls", "ca", "create");
  assert.deepEqual(again, { code: 1, out: "", err: "consul-agent-ca.pem already exists.\n" });
  // The key alone is enough to refuse.
  const nomad = await cli("tls", "ca", "create", "-domain", "nomad");
  assert.equal(nomad.code, 0);
  rmSync(join(dir, "nomad-agent-ca.pem"));
  assert.deepEqual(await cli("tls", "ca", "create", "-domain=nomad"), { code: 1, out: "", err: "nomad-agent-ca-key.pem already exists.\n" });
});

test("tls: ca create -name-constraint, -additional-name-constraint, -common-name, -days, -cluster-id", async () => {
  const r = await cli("tls", "ca", "create", "-domain", "example", "-name-constraint", "-additional-name-constraint", "ui.example.com", "-common-name", "Test CA", "-days", "30", "-cluster-id", "ABC");
  assert.equal(r.code, 0, r.err);
  const ca = cert("example-agent-ca.pem");
  assert.deepEqual(ca.info.nameConstraints?.permittedDns, ["ui.example.com", "example", "localhost"]);
  assert.equal(ca.info.extensions.get("2.5.29.30")?.critical, true);
  assert.match(ca.x.subject, /CN=Test CA$/);
  assert.equal(ca.info.notAfterMs - ca.info.notBeforeMs, 30 * 86_400_000);
  assert.equal(ca.x.subjectAltName, "URI:spiffe://abc.example");
  const warned = await cli("tls", "ca", "create", "-domain", "w", "-additional-name-constraint", "x");
  assert.equal(warned.code, 0);
  assert.match(warned.err, /-additional-name-constraint is only used with -name-constraint/);
  assert.equal(cert("w-agent-ca.pem").info.nameConstraints, undefined);
});

test("tls: cert create refuses what Consul refuses", async () => {
  const cases: [string[], string][] = [
    [[], "Please provide either -server, -client, or -cli\n"],
    [["-ca", "", "-key", ""], "Please provide the ca\n"],
    [["-ca", "foo.pem", "-key", ""], "Please provide the key\n"],
    [["-server", "-client", "-cli"], "Please provide either -server, -client, or -cli\n"],
    [["-server", "-client"], "Please provide either -server, -client, or -cli\n"],
    [["-server", "-cli"], "Please provide either -server, -client, or -cli\n"],
    [["-client", "-cli"], "Please provide either -server, -client, or -cli\n"],
    [["-client", "-node", "foo"], "-node requires -server\n"],
    [["-cli", "-node", "foo"], "-node requires -server\n"],
    [["-server", "-days", "0"], "Invalid -days 0: a certificate must be valid for at least one day\n"],
    [["-server", "-additional-ipaddress", "300.1.1.1"], 'Invalid -additional-ipaddress "300.1.1.1": not an IP address\n'],
    [["-server", "-domain", "none"], "Error reading CA: open none-agent-ca.pem: no such file or directory\n"],
    [["-server", "-key", "missing.pem"], "Error reading CA key: open missing.pem: no such file or directory\n"],
  ];
  for (const [args, err] of cases) {
    const r = await cli("tls", "cert", "create", ...args);
    assert.equal(r.code, 1, args.join(" "));
    assert.equal(r.err, err, args.join(" "));
  }
  assert.equal(existsSync(join(dir, "dc1-server-consul-0.pem")), false);
});

test("tls: cert create -server/-client/-cli: file names counting up, Consul's lines, names and usages", async () => {
  const warning = "==> WARNING: Server Certificates grants authority to become a\n    server and access all state in the cluster including root keys\n    and all ACL tokens. Do not distribute them to production hosts\n    that are not server nodes. Store them as securely as CA keys.\n";
  const using = "==> Using consul-agent-ca.pem and consul-agent-ca-key.pem\n";
  const s0 = await cli("tls", "cert", "create", "-server");
  assert.deepEqual(s0, { code: 0, out: `${warning}${using}==> Saved dc1-server-consul-0.pem\n==> Saved dc1-server-consul-0-key.pem\n`, err: "" });
  assert.equal(statSync(join(dir, "dc1-server-consul-0-key.pem")).mode & 0o777, 0o600);
  const s1 = await cli("tls", "cert", "create", "-server", "-node", "mysrv", "-additional-dnsname", "extra.example", "-additional-ipaddress", "10.0.0.5", "-additional-ipaddress", "::1");
  assert.equal(s1.code, 0, s1.err);
  assert.match(s1.out, /Saved dc1-server-consul-1\.pem\n==> Saved dc1-server-consul-1-key\.pem\n$/);
  // A lone key file takes its index too.
  writeFileSync(join(dir, "dc1-server-consul-2-key.pem"), "");
  const s3 = await cli("tls", "cert", "create", "-server", "-dc", "dc1");
  assert.match(s3.out, /Saved dc1-server-consul-3\.pem\n/);
  const c0 = await cli("tls", "cert", "create", "-client");
  assert.deepEqual(c0, { code: 0, out: `${using}==> Saved dc1-client-consul-0.pem\n==> Saved dc1-client-consul-0-key.pem\n`, err: "" });
  const l0 = await cli("tls", "cert", "create", "-cli", "-additional-dnsname", "dropped.example");
  assert.equal(l0.code, 0);
  assert.match(l0.err, /-additional-dnsname is not used with -cli/);
  assert.equal((await cli("tls", "ca", "create", "-domain", "alt")).code, 0);
  const n0 = await cli("tls", "cert", "create", "-server", "-dc", "dc2", "-domain", "alt");
  assert.match(n0.out, /==> Using alt-agent-ca\.pem and alt-agent-ca-key\.pem\n==> Saved dc2-server-alt-0\.pem\n/);

  const eku = (p: string) => {
    const e = cert(p).info.extensions.get("2.5.29.37");
    return e ? Buffer.from(e.value).toString("hex") : undefined;
  };
  const serverAuth = "06082b06010505070301";
  const clientAuth = "06082b06010505070302";
  const cases: [string, string, string, string | undefined][] = [
    ["dc1-server-consul-0.pem", "CN=server.dc1.consul", "DNS:server.dc1.consul, DNS:localhost, IP Address:127.0.0.1", `3014${serverAuth}${clientAuth}`],
    ["dc1-server-consul-1.pem", "CN=server.dc1.consul", "DNS:extra.example, DNS:mysrv.server.dc1.consul, DNS:server.dc1.consul, DNS:localhost, IP Address:10.0.0.5, IP Address:0:0:0:0:0:0:0:1, IP Address:127.0.0.1", `3014${serverAuth}${clientAuth}`],
    ["dc1-client-consul-0.pem", "CN=client.dc1.consul", "DNS:client.dc1.consul, DNS:localhost, IP Address:127.0.0.1", `3014${clientAuth}${serverAuth}`],
    ["dc1-cli-consul-0.pem", "CN=cli.dc1.consul", "DNS:cli.dc1.consul, DNS:localhost", undefined],
    ["dc2-server-alt-0.pem", "CN=server.dc2.alt", "DNS:server.dc2.alt, DNS:localhost, IP Address:127.0.0.1", `3014${serverAuth}${clientAuth}`],
  ];
  for (const [path, subject, san, usage] of cases) {
    const c = cert(path);
    assert.equal(c.x.subject, subject, path);
    assert.equal(c.x.subjectAltName, san, path);
    assert.equal(eku(path), usage, path);
    assert.equal(c.x.ca, false);
    assert.equal(c.info.notAfterMs - c.info.notBeforeMs, 365 * 86_400_000);
    const ca = new X509Certificate(readFileSync(join(dir, path.includes("alt") ? "alt-agent-ca.pem" : "consul-agent-ca.pem")));
    assert.ok(c.x.verify(ca.publicKey), path);
  }
});

test("tls: cert create against a name-constrained CA refuses a name outside it, with Go's message", async () => {
  assert.equal((await cli("tls", "ca", "create", "-domain", "nc", "-name-constraint")).code, 0);
  const bad = await cli("tls", "cert", "create", "-server", "-domain", "nc", "-additional-dnsname", "other.example");
  assert.equal(bad.code, 1);
  assert.match(bad.err, /^x509: a root or intermediate certificate is not authorized to sign for this name: DNS name "other\.example" is not permitted by any constraint\n$/);
  assert.equal(existsSync(join(dir, "dc1-server-nc-0.pem")), false);
  const good = await cli("tls", "cert", "create", "-server", "-domain", "nc", "-node", "a");
  assert.equal(good.code, 0, good.err);
});

test("tls: help for the tls commands", async () => {
  const top = await cli("tls");
  assert.equal(top.code, 1);
  assert.match(top.err, /Subcommands:\n\s+ca\s+Helpers for CAs\n\s+cert\s+Helpers for certificates\n/);
  const h = await cli("tls", "-h");
  assert.equal(h.code, 0);
  assert.match(h.out, /Usage: cairn tls <subcommand>/);
  const create = await cli("tls", "cert", "create", "-h");
  assert.match(create.out, /-additional-ipaddress=<string>/);
  assert.match((await cli("-h")).out, /\n\s+tls\s+Builtin helpers for creating CAs and certificates\n/);
});
