// The `tls` stanzas as each listener sees them (consul tlsutil.Config built
// from TLSProtocolConfig): a field unset in `internal_rpc` or `https` takes
// the value from `defaults`; Go's names for versions and cipher suites are
// turned into OpenSSL's, which node:tls speaks. Pure: reading the files is
// core/tls_context_node.ts's job.
import { ConfigError } from "../errors.ts";
import type { AgentConfig, TlsConfig, TlsProtocolConfig } from "./types.ts";

export type TlsVersion = "TLSv1" | "TLSv1.1" | "TLSv1.2" | "TLSv1.3";

export interface EffectiveTls {
  caFile: string;
  caPath: string;
  certFile: string;
  keyFile: string;
  verifyIncoming: boolean;
  verifyOutgoing: boolean;
  verifyServerHostname: boolean;
  minVersion: TlsVersion;
  /** OpenSSL cipher list for TLS 1.2 and below; "" = node's default. */
  ciphers: string;
}

const versions: Readonly<Record<string, TlsVersion>> = {
  TLSv1_0: "TLSv1", TLSv1_1: "TLSv1.1", TLSv1_2: "TLSv1.2", TLSv1_3: "TLSv1.3",
  // Consul's older spellings.
  tls10: "TLSv1", tls11: "TLSv1.1", tls12: "TLSv1.2", tls13: "TLSv1.3",
};

/** The suites Consul accepts (tlsutil goTLSCipherSuites), by Go name → OpenSSL name. */
const cipherSuites: Readonly<Record<string, string>> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: "ECDHE-ECDSA-AES128-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: "ECDHE-RSA-AES128-SHA256",
};

export type TlsStanza = "internalRpc" | "https";

const stanzaName: Record<TlsStanza, string> = { internalRpc: "internal_rpc", https: "https" };

/** One stanza with `defaults` filled in. Unknown versions and suites are left for validateTls to refuse. */
export function effectiveTls(tls: TlsConfig, stanza: TlsStanza): EffectiveTls {
  const own: TlsProtocolConfig = tls[stanza];
  const d = tls.defaults;
  const pick = <K extends keyof TlsProtocolConfig>(k: K): TlsProtocolConfig[K] => (own[k] !== undefined ? own[k] : d[k]);
  const suites = (pick("tlsCipherSuites") ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  return {
    caFile: pick("caFile") ?? "",
    caPath: pick("caPath") ?? "",
    certFile: pick("certFile") ?? "",
    keyFile: pick("keyFile") ?? "",
    verifyIncoming: pick("verifyIncoming") ?? false,
    // verify_server_hostname implies verify_outgoing, as in Consul.
    verifyOutgoing: (pick("verifyOutgoing") ?? false) || (stanza === "internalRpc" && own.verifyServerHostname === true),
    verifyServerHostname: stanza === "internalRpc" ? (own.verifyServerHostname ?? false) : false,
    minVersion: versions[pick("tlsMinVersion") ?? "TLSv1_2"] ?? "TLSv1.2",
    ciphers: suites.map((s) => cipherSuites[s] ?? s).join(":"),
  };
}

/** Whether a stanza has anything to serve with (a certificate and its key). */
export function hasCertificate(t: EffectiveTls): boolean {
  return t.certFile !== "" && t.keyFile !== "";
}

/** The name a server's certificate must carry with verify_server_hostname (consul tlsutil ServerSNI). */
export function serverTlsName(datacenter: string, domain: string): string {
  return `server.${datacenter}.${domain.replace(/\.$/, "")}`;
}

/** Consul's checks on the tls stanzas (tlsutil.Configurator.Update, builder.validate), with its wording where it has one. */
export function validateTls(c: Pick<AgentConfig, "tls" | "ports">): ConfigError[] {
  const errors: ConfigError[] = [];
  const bad = (field: string, message: string) => errors.push(new ConfigError(message, { field }));
  for (const [name, stanza] of [["defaults", c.tls.defaults], ["https", c.tls.https]] as const) {
    if (stanza.verifyServerHostname !== undefined) {
      bad(`tls.${name}.verify_server_hostname`, `verify_server_hostname is only valid in the tls.internal_rpc stanza, not tls.${name}`);
    }
  }
  for (const [name, stanza] of [["defaults", c.tls.defaults], ["internal_rpc", c.tls.internalRpc], ["https", c.tls.https]] as const) {
    if (stanza.tlsMinVersion !== undefined && !(stanza.tlsMinVersion in versions)) {
      bad(`tls.${name}.tls_min_version`, `tls.${name}.tls_min_version: "${stanza.tlsMinVersion}" is not a supported TLS version; use TLSv1_0, TLSv1_1, TLSv1_2 or TLSv1_3`);
    }
    for (const suite of (stanza.tlsCipherSuites ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
      if (!(suite in cipherSuites)) bad(`tls.${name}.tls_cipher_suites`, `tls.${name}.tls_cipher_suites: unsupported cipher suite "${suite}"`);
    }
  }
  for (const stanza of ["internalRpc", "https"] as const) {
    const t = effectiveTls(c.tls, stanza);
    const label = stanzaName[stanza];
    if (t.ciphers !== "" && t.minVersion === "TLSv1.3") {
      bad(`tls.${label}.tls_cipher_suites`, `tls.${label}: tls_cipher_suites cannot be set with tls_min_version TLSv1_3 (TLS 1.3 suites are not configurable)`);
    }
    if ((t.certFile === "") !== (t.keyFile === "")) {
      bad(`tls.${label}.${t.certFile === "" ? "cert_file" : "key_file"}`, `tls.${label}: cert_file and key_file must be given together`);
    }
    if (t.verifyIncoming && t.caFile === "" && t.caPath === "") {
      bad(`tls.${label}.verify_incoming`, `${label}: VerifyIncoming set but no CA certificates were provided`);
    }
    if (t.verifyIncoming && !hasCertificate(t)) {
      bad(`tls.${label}.verify_incoming`, `${label}: VerifyIncoming set but no valid certificate provided`);
    }
    if (stanza === "internalRpc" && t.verifyOutgoing && t.caFile === "" && t.caPath === "") {
      bad(`tls.${label}.verify_outgoing`, `${label}: VerifyOutgoing set but no CA certificates were provided`);
    }
  }
  if (c.ports.https >= 0 && !hasCertificate(effectiveTls(c.tls, "https"))) {
    bad("ports.https", `ports.https is ${c.ports.https} but there is no certificate for HTTPS: set tls.https (or tls.defaults) cert_file and key_file`);
  }
  return errors;
}
