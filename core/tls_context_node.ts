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

/**
 * `caFile`, then every .pem/.crt/.cer file of `caPath` in name order (consul
 * tlsutil LoadCAs reads the directory the same way). A file or directory that
 * does not read goes to `fail` (default: its fs error is thrown).
 */
export function readCas(caFile: string, caPath: string, fail: (key: "ca_file" | "ca_path", path: string, err: unknown) => never = (_k, _p, err) => {
  throw err;
}): Buffer[] {
  const readOne = (key: "ca_file" | "ca_path", path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      return fail(key, path, err);
    }
  };
  const out = caFile ? [readOne("ca_file", caFile)] : [];
  if (!caPath) return out;
  let names: string[];
  try {
    names = readdirSync(caPath);
  } catch (err) {
    return fail("ca_path", caPath, err);
  }
  for (const name of names.sort()) if (/\.(pem|crt|cer)$/i.test(name)) out.push(readOne("ca_path", join(caPath, name)));
  return out;
}

/**
 * A stanza's certificate, key and CAs as node:tls options, checked by
 * OpenSSL now (the context it built comes along), so a file that does not
 * read or a key that does not match is a start-up error naming the files.
 */
export function tlsMaterial(t: EffectiveTls, label: string): { options: import("node:tls").SecureContextOptions; context: SecureContext } {
  const ca = readCas(t.caFile, t.caPath, (key, path, err) => {
    throw new ConfigError(`tls.${label}.${key}: cannot read ${path}: ${errorMessage(err)}`, { field: `tls.${label}.${key}` });
  });
  const options: import("node:tls").SecureContextOptions = {
    ...(ca.length > 0 ? { ca } : {}),
    ...(t.certFile ? { cert: read(`tls.${label}.cert_file`, t.certFile) } : {}),
    ...(t.keyFile ? { key: read(`tls.${label}.key_file`, t.keyFile) } : {}),
    minVersion: t.minVersion,
    ...(t.ciphers ? { ciphers: t.ciphers } : {}),
  };
  try {
    return { options, context: tls().createSecureContext(options) };
  } catch (err) {
    throw new ConfigError(`tls.${label}: the certificate ${t.certFile || "(none)"}, key ${t.keyFile || "(none)"} and CAs do not load: ${errorMessage(err)}`, { field: `tls.${label}` });
  }
}

/** Options for a TLS listener; verify_incoming asks for and checks a client certificate. */
export function tlsServerOptions(t: EffectiveTls, label: string): TlsServerOptions {
  return { ...tlsMaterial(t, label).options, requestCert: t.verifyIncoming, rejectUnauthorized: t.verifyIncoming };
}

/** A listener's context rebuilt from the files (cairn reload); throws a ConfigError and changes nothing when they do not load. */
export function reloadedServerContext(t: EffectiveTls, label: string): SecureContext {
  return tlsMaterial(t, label).context;
}

/**
 * Options for dialing a server: our certificate (for servers that verify
 * incoming), the CAs, and with verify_outgoing the server's chain checked;
 * with verify_server_hostname also its name (server.<dc>.<domain>). They
 * carry the SecureContext tlsMaterial built, so every dial shares it: given
 * the files instead, node:tls parses the key, certificate and CAs again for
 * each connection (tls.createSecureContext per dial). A reload builds new
 * options, and so a new context, from the files.
 */
export function tlsClientOptions(t: EffectiveTls, label: string, serverName: string | undefined): TlsClientOptions {
  return {
    secureContext: tlsMaterial(t, label).context,
    rejectUnauthorized: t.verifyOutgoing,
    // With verify_server_hostname the caller gives the name (here, or per connection as `servername`).
    ...(serverName !== undefined ? { servername: serverName } : {}),
    // Without verify_server_hostname the chain is checked but not the name (consul: verify_outgoing alone).
    ...(t.verifyServerHostname ? {} : { checkServerIdentity: () => undefined }),
  };
}
