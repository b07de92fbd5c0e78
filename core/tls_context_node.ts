// Certificates from the files the tls stanzas name, as node:tls options for a
// listener (HTTPS, server RPC) or a dialer (RPC to servers). node:tls is
// loaded only by an agent that has TLS configured, so one without carries
// none of OpenSSL's contexts. Reload builds new options from the files again.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { EffectiveTls } from "./config/tls.ts";
import { ConfigError, errorMessage } from "./errors.ts";

type SecureContext = import("node:tls").SecureContext;
export type TlsServerOptions = import("node:tls").TlsOptions;
export type TlsClientOptions = import("node:tls").ConnectionOptions;

function tls(): typeof import("node:tls") {
  return process.getBuiltinModule("node:tls");
}

function read(field: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${field}: cannot read ${path}: ${errorMessage(err)}`, { field });
  }
}

/** ca_file, then every .pem/.crt/.cer file of ca_path (consul tlsutil LoadCAs reads the directory the same way). */
export function loadCas(t: EffectiveTls, label: string): Buffer[] | undefined {
  const out: Buffer[] = [];
  if (t.caFile) out.push(read(`tls.${label}.ca_file`, t.caFile));
  if (t.caPath) {
    let names: string[];
    try {
      names = readdirSync(t.caPath);
    } catch (err) {
      throw new ConfigError(`tls.${label}.ca_path: cannot read ${t.caPath}: ${errorMessage(err)}`, { field: `tls.${label}.ca_path` });
    }
    for (const name of names.sort()) if (/\.(pem|crt|cer)$/i.test(name)) out.push(read(`tls.${label}.ca_path`, join(t.caPath, name)));
  }
  return out.length > 0 ? out : undefined;
}

/** Certificate, key and CAs checked by OpenSSL now, so a mismatch is a start-up error that names the files. */
function secureContext(t: EffectiveTls, label: string): { context: SecureContext; ca: Buffer[] | undefined; cert?: Buffer; key?: Buffer } {
  const ca = loadCas(t, label);
  const cert = t.certFile ? read(`tls.${label}.cert_file`, t.certFile) : undefined;
  const key = t.keyFile ? read(`tls.${label}.key_file`, t.keyFile) : undefined;
  try {
    const context = tls().createSecureContext({
      ...(ca ? { ca } : {}),
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      minVersion: t.minVersion,
      ...(t.ciphers ? { ciphers: t.ciphers } : {}),
    });
    return { context, ca, ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
  } catch (err) {
    throw new ConfigError(`tls.${label}: the certificate ${t.certFile || "(none)"}, key ${t.keyFile || "(none)"} and CAs do not load: ${errorMessage(err)}`, { field: `tls.${label}` });
  }
}

/** Options for a TLS listener; verify_incoming asks for and checks a client certificate. */
export function tlsServerOptions(t: EffectiveTls, label: string): TlsServerOptions {
  const { ca, cert, key } = secureContext(t, label);
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    minVersion: t.minVersion,
    ...(t.ciphers ? { ciphers: t.ciphers } : {}),
    requestCert: t.verifyIncoming,
    rejectUnauthorized: t.verifyIncoming,
  };
}

/** A listener's context rebuilt from the files (cairn reload); throws a ConfigError and changes nothing when they do not load. */
export function reloadedServerContext(t: EffectiveTls, label: string): SecureContext {
  return secureContext(t, label).context;
}

/**
 * Options for dialing a server: our certificate (for servers that verify
 * incoming), the CAs, and with verify_outgoing the server's chain checked;
 * with verify_server_hostname also its name (server.<dc>.<domain>).
 */
export function tlsClientOptions(t: EffectiveTls, label: string, serverName: string | undefined): TlsClientOptions {
  const { ca, cert, key } = secureContext(t, label);
  // With verify_server_hostname the caller gives the name (here, or per connection as `servername`).
  const checkName = t.verifyServerHostname;
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    minVersion: t.minVersion,
    ...(t.ciphers ? { ciphers: t.ciphers } : {}),
    rejectUnauthorized: t.verifyOutgoing,
    ...(serverName !== undefined ? { servername: serverName } : {}),
    // Without verify_server_hostname the chain is checked but not the name (consul: verify_outgoing alone).
    ...(checkName ? {} : { checkServerIdentity: () => undefined }),
  };
}
