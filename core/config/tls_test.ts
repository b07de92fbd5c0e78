import assert from "node:assert/strict";
import { test } from "node:test";
import { buildConfig } from "./load.ts";
import { effectiveTls, validateTls } from "./tls.ts";
import { validateConfig } from "./validate.ts";

function fromHcl(text: string) {
  return buildConfig({ dev: true, sources: [{ name: "x.hcl", format: "hcl", text }] });
}

function warnedKeys(c: { warnings: { key?: string }[] }): string[] {
  return c.warnings.map((w) => w.key ?? "").filter((k) => k !== "");
}

test("tls stanzas: https and internal_rpc take what they leave unset from defaults", () => {
  const c = fromHcl(`
tls {
  defaults {
    ca_file = "/etc/consul/ca.pem"
    cert_file = "/etc/consul/agent.pem"
    key_file = "/etc/consul/agent-key.pem"
    verify_incoming = true
    verify_outgoing = true
    tls_min_version = "TLSv1_3"
  }
  internal_rpc { verify_server_hostname = true }
  https {
    verify_incoming = false
    cert_file = "/etc/consul/https.pem"
    key_file = "/etc/consul/https-key.pem"
  }
}
ports { https = 8501 }
addresses { https = "127.0.0.5" }
`);
  assert.deepEqual(warnedKeys(c), []);
  assert.equal(c.ports.https, 8501);
  assert.equal(c.addresses.https, "127.0.0.5");
  const rpc = effectiveTls(c.tls, "internalRpc");
  assert.deepEqual(rpc, {
    caFile: "/etc/consul/ca.pem", caPath: "", certFile: "/etc/consul/agent.pem", keyFile: "/etc/consul/agent-key.pem",
    verifyIncoming: true, verifyOutgoing: true, verifyServerHostname: true, minVersion: "TLSv1.3", ciphers: "",
  });
  const https = effectiveTls(c.tls, "https");
  assert.equal(https.verifyIncoming, false, "the stanza's own value wins");
  assert.equal(https.certFile, "/etc/consul/https.pem");
  assert.equal(https.caFile, "/etc/consul/ca.pem", "from defaults");
  assert.equal(https.verifyServerHostname, false, "an RPC-only setting");
  assert.deepEqual(validateConfig(c).map((e) => e.field), []);
});

test("tls: Consul's older top-level keys land in the stanzas (and are named as deprecated)", () => {
  const c = fromHcl(`
ca_file = "/ca.pem"
cert_file = "/a.pem"
key_file = "/a-key.pem"
verify_incoming_rpc = true
verify_incoming_https = false
verify_outgoing = true
verify_server_hostname = true
tls_min_version = "tls12"
tls_cipher_suites = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
`);
  const rpc = effectiveTls(c.tls, "internalRpc");
  assert.equal(rpc.caFile, "/ca.pem");
  assert.equal(rpc.verifyIncoming, true);
  assert.equal(rpc.verifyServerHostname, true);
  assert.equal(rpc.minVersion, "TLSv1.2");
  assert.equal(rpc.ciphers, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384");
  assert.equal(effectiveTls(c.tls, "https").verifyIncoming, false);
  assert.deepEqual(validateConfig(c).map((e) => e.field), []);
});

test("verify_server_hostname implies verify_outgoing on internal RPC, as in Consul", () => {
  const c = fromHcl(`tls {
  defaults { ca_file = "/ca.pem" }
  internal_rpc { verify_server_hostname = true }
}`);
  assert.equal(effectiveTls(c.tls, "internalRpc").verifyOutgoing, true);
});

test("tls: Consul's refusals, each naming the key", () => {
  const cases: Array<[string, string, RegExp]> = [
    [`tls { defaults { verify_server_hostname = true } }`, "tls.defaults.verify_server_hostname", /only valid in the tls.internal_rpc stanza/],
    [`tls { defaults { tls_min_version = "SSLv3" } }`, "tls.defaults.tls_min_version", /not a supported TLS version/],
    [`tls { https { tls_cipher_suites = "TLS_RSA_WITH_RC4_128_SHA" } }`, "tls.https.tls_cipher_suites", /unsupported cipher suite "TLS_RSA_WITH_RC4_128_SHA"/],
    [`tls { defaults { cert_file = "/a.pem" } }`, "tls.internal_rpc.key_file", /cert_file and key_file must be given together/],
    [`tls { defaults { cert_file = "/a.pem", key_file = "/k.pem", verify_incoming = true } }`, "tls.internal_rpc.verify_incoming", /VerifyIncoming set but no CA certificates were provided/],
    [`tls { internal_rpc { verify_outgoing = true } }`, "tls.internal_rpc.verify_outgoing", /VerifyOutgoing set but no CA certificates were provided/],
    [`ports { https = 8501 }`, "ports.https", /no certificate for HTTPS/],
    [`tls { defaults { tls_min_version = "TLSv1_3", tls_cipher_suites = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" } }`, "tls.https.tls_cipher_suites", /cannot be set with tls_min_version TLSv1_3/],
  ];
  for (const [hcl, field, message] of cases) {
    const errors = validateTls(fromHcl(hcl));
    const hit = errors.find((e) => e.field === field);
    assert.ok(hit, `${hcl}: expected an error on ${field}, got ${JSON.stringify(errors.map((e) => [e.field, e.message]))}`);
    assert.match(hit.message, message, hcl);
  }
});

test("tls: no stanza, no TLS (and no warning)", () => {
  const c = buildConfig({ dev: true });
  assert.equal(c.ports.https, -1);
  assert.deepEqual(validateTls(c), []);
  assert.equal(effectiveTls(c.tls, "internalRpc").verifyOutgoing, false);
});
