// Consul's tlsutil.GenerateCA / GenerateCert / Verify on node:crypto: ECDSA
// P-256 keys written as SEC1 "EC PRIVATE KEY" PEM, certificates built by
// core/tls/x509.ts and signed here. node:crypto makes keys and signatures but
// cannot issue certificates; a small DER encoder of our own does the rest (no
// library loaded into every agent, see core/tls/der.ts). node:crypto itself
// is loaded on first use, never at start.
import type * as NodeCrypto from "node:crypto";
import { isoTimestamp } from "../clock/utc_text.ts";
import { errorMessage } from "../errors.ts";
import {
  authorityKeyIdExtension,
  basicConstraintsExtension,
  encodeCertificate,
  encodeName,
  encodeTbsCertificate,
  extKeyUsageExtension,
  KEY_USAGE,
  keyUsageExtension,
  nameConstraintsExtension,
  nameConstraintViolation,
  OID,
  parseCertificate,
  pemDecodeFirst,
  pemEncode,
  subjectAltNameExtension,
  subjectKeyIdExtension,
} from "./x509.ts";
import type { CertificateInfo, ExtKeyUsage } from "./x509.ts";

function nodeCrypto(): typeof NodeCrypto {
  return process.getBuiltinModule("node:crypto");
}

const DAY_MS = 86_400_000;

/** A serial below 2^128 (Go's GenerateSerialNumber): 16 random bytes. */
export function generateSerial(): Uint8Array {
  return new Uint8Array(nodeCrypto().randomBytes(16));
}

export function serialDecimal(serial: Uint8Array): string {
  let n = 0n;
  for (const b of serial) n = (n << 8n) | BigInt(b);
  return n.toString(10);
}

/** A new ECDSA P-256 key and its SEC1 PEM ("EC PRIVATE KEY", as Go's x509.MarshalECPrivateKey). */
export function generatePrivateKey(): { key: NodeCrypto.KeyObject; pem: string } {
  const { privateKey } = nodeCrypto().generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return { key: privateKey, pem: privateKey.export({ type: "sec1", format: "pem" }) as string };
}

/**
 * A signing key from PEM as Consul's ParseSigner reads it: the first block,
 * "EC PRIVATE KEY", "RSA PRIVATE KEY" or PKCS#8 "PRIVATE KEY".
 */
export function parseSigner(pem: string): NodeCrypto.KeyObject {
  const block = pemDecodeFirst(pem);
  if (!block) throw new Error("no PEM-encoded data found");
  if (!["EC PRIVATE KEY", "RSA PRIVATE KEY", "PRIVATE KEY"].includes(block.type)) {
    throw new Error(`unknown PEM block type for signing key: ${block.type}`);
  }
  try {
    return nodeCrypto().createPrivateKey({ key: pem, format: "pem" });
  } catch (err) {
    throw new Error(`failed to parse ${block.type}: ${errorMessage(err)}`);
  }
}

/** The signature algorithm Go picks for a key, and how to sign with it. */
function signerAlgorithm(key: NodeCrypto.KeyObject): { algorithm: string; hash: string | null } {
  const type = key.asymmetricKeyType;
  if (type === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === "prime256v1") return { algorithm: OID.ecdsaWithSha256, hash: "sha256" };
    if (curve === "secp384r1") return { algorithm: OID.ecdsaWithSha384, hash: "sha384" };
    if (curve === "secp521r1") return { algorithm: OID.ecdsaWithSha512, hash: "sha512" };
    throw new Error(`unsupported elliptic curve for signing key: ${curve ?? "unknown"}`);
  }
  if (type === "rsa") return { algorithm: OID.sha256WithRsa, hash: "sha256" };
  if (type === "ed25519") return { algorithm: OID.ed25519, hash: null };
  throw new Error(`unsupported signing key type: ${type ?? "unknown"}`);
}

function sign(key: NodeCrypto.KeyObject, tbs: Uint8Array): { algorithm: string; signature: Uint8Array } {
  const { algorithm, hash } = signerAlgorithm(key);
  const signature = nodeCrypto().sign(hash, tbs, key.asymmetricKeyType === "ec" ? { key, dsaEncoding: "der" } : key);
  return { algorithm, signature: new Uint8Array(signature) };
}

function spkiOf(key: NodeCrypto.KeyObject): Uint8Array {
  const pub = key.type === "private" ? nodeCrypto().createPublicKey(key) : key;
  return new Uint8Array(pub.export({ type: "spki", format: "der" }));
}

/** Consul's keyID: SHA-256 of the DER SubjectPublicKeyInfo. */
function keyId(spki: Uint8Array): Uint8Array {
  return new Uint8Array(nodeCrypto().createHash("sha256").update(spki).digest());
}

function issue(opts: { signer: NodeCrypto.KeyObject; tbs: Omit<Parameters<typeof encodeTbsCertificate>[0], "signatureAlgorithm"> }): string {
  const { algorithm } = signerAlgorithm(opts.signer);
  const tbs = encodeTbsCertificate({ ...opts.tbs, signatureAlgorithm: algorithm });
  const { signature } = sign(opts.signer, tbs);
  return pemEncode("CERTIFICATE", encodeCertificate(tbs, algorithm, signature));
}

export interface CaOptions {
  /** Validity from `nowMs`, in days. */
  days: number;
  nowMs: number;
  /** Defaults to "Consul Agent CA <serial>". */
  commonName?: string;
  /** With any, a critical NameConstraints extension permitting these DNS domains. */
  permittedDnsDomains?: readonly string[];
  /** With a cluster id, the CA carries the URI spiffe://<cluster-id>.<domain> (Consul's SpiffeIDSigning). */
  clusterId?: string;
  domain?: string;
}

/** A self-signed CA as Consul's tlsutil.GenerateCA: certificate and key, both PEM. */
export function generateCa(opts: CaOptions): { certPem: string; keyPem: string } {
  const { key, pem } = generatePrivateKey();
  const serial = generateSerial();
  const spki = spkiOf(key);
  const id = keyId(spki);
  const name = encodeName({
    country: "US",
    province: "CA",
    locality: "San Francisco",
    streetAddress: "101 Second Street",
    postalCode: "94105",
    organization: "HashiCorp Inc.",
    commonName: opts.commonName || `Consul Agent CA ${serialDecimal(serial)}`,
  });
  const extensions = [
    keyUsageExtension(KEY_USAGE.certSign | KEY_USAGE.crlSign | KEY_USAGE.digitalSignature),
    basicConstraintsExtension(true),
    subjectKeyIdExtension(id),
    authorityKeyIdExtension(id),
  ];
  if (opts.clusterId) extensions.push(subjectAltNameExtension({ uris: [`spiffe://${opts.clusterId}.${opts.domain ?? "consul"}`] }));
  if (opts.permittedDnsDomains && opts.permittedDnsDomains.length > 0) {
    extensions.push(nameConstraintsExtension(opts.permittedDnsDomains, true));
  }
  const certPem = issue({
    signer: key,
    tbs: {
      serial,
      issuer: name,
      subject: name,
      notBeforeMs: opts.nowMs,
      notAfterMs: opts.nowMs + opts.days * DAY_MS,
      subjectPublicKeyInfo: spki,
      extensions,
    },
  });
  return { certPem, keyPem: pem };
}

/** The CA certificate from PEM as Consul's parseCert reads it: the first block must be a CERTIFICATE. */
export function parseCaPem(pem: string): CertificateInfo {
  const block = pemDecodeFirst(pem);
  if (!block) throw new Error("no PEM-encoded data found");
  if (block.type !== "CERTIFICATE") throw new Error("first PEM-block should be CERTIFICATE type");
  return parseCertificate(block.der);
}

export interface CertOptions {
  caPem: string;
  caKeyPem: string;
  /** The subject's CommonName. */
  name: string;
  days: number;
  nowMs: number;
  dnsNames: readonly string[];
  ipAddresses: readonly Uint8Array[];
  extKeyUsage: readonly ExtKeyUsage[];
}

/** A leaf certificate and its new key as Consul's tlsutil.GenerateCert, both PEM. */
export function generateCert(opts: CertOptions): { certPem: string; keyPem: string } {
  let ca: CertificateInfo;
  try {
    ca = parseCaPem(opts.caPem);
  } catch (err) {
    throw new Error(`failed to parse CA: ${errorMessage(err)}`);
  }
  const signer = parseSigner(opts.caKeyPem);
  const signerSpki = spkiOf(signer);
  if (!bytesEqual(signerSpki, ca.subjectPublicKeyInfo)) {
    throw new Error("failed to create certificate: x509: provided PrivateKey doesn't match parent's PublicKey");
  }
  const { key, pem } = generatePrivateKey();
  const spki = spkiOf(key);
  // Go's CreateCertificate order: KeyUsage, ExtKeyUsage, BasicConstraints, SubjectKeyId, AuthorityKeyId, SAN.
  const extensions = [keyUsageExtension(KEY_USAGE.digitalSignature | KEY_USAGE.keyEncipherment)];
  if (opts.extKeyUsage.length > 0) extensions.push(extKeyUsageExtension(opts.extKeyUsage));
  extensions.push(basicConstraintsExtension(false), subjectKeyIdExtension(keyId(spki)));
  if (ca.subjectKeyId && ca.subjectKeyId.length > 0) extensions.push(authorityKeyIdExtension(ca.subjectKeyId));
  if (opts.dnsNames.length > 0 || opts.ipAddresses.length > 0) {
    extensions.push(subjectAltNameExtension({ dnsNames: opts.dnsNames, ipAddresses: opts.ipAddresses }));
  }
  const certPem = issue({
    signer,
    tbs: {
      serial: generateSerial(),
      issuer: ca.subject,
      subject: encodeName({ commonName: opts.name }),
      notBeforeMs: opts.nowMs,
      notAfterMs: opts.nowMs + opts.days * DAY_MS,
      subjectPublicKeyInfo: spki,
      extensions,
    },
  });
  return { certPem, keyPem: pem };
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Consul's tlsutil.Verify: the certificate chains to the CA (signature,
 * validity, the CA's name constraints) and is valid for the host `name`.
 * Throws with the reason.
 */
export function verifyCert(opts: { caPem: string; certPem: string; name: string; nowMs: number }): void {
  const { X509Certificate } = nodeCrypto();
  let ca: CertificateInfo;
  let caX509: NodeCrypto.X509Certificate;
  try {
    ca = parseCaPem(opts.caPem);
    caX509 = new X509Certificate(opts.caPem);
  } catch {
    throw new Error("failed to parse root certificate");
  }
  const block = pemDecodeFirst(opts.certPem);
  let leaf: CertificateInfo;
  let leafX509: NodeCrypto.X509Certificate;
  try {
    if (block?.type !== "CERTIFICATE") throw new Error("not a certificate");
    leaf = parseCertificate(block.der);
    leafX509 = new X509Certificate(opts.certPem);
  } catch {
    throw new Error("failed to parse certificate");
  }
  if (!bytesEqual(leaf.issuer, ca.subject) || !leafX509.verify(caX509.publicKey)) {
    throw new Error("x509: certificate signed by unknown authority");
  }
  if (!ca.isCa) throw new Error("x509: certificate signed by unknown authority (the CA certificate is not a CA: basicConstraints cA is not set)");
  for (const [which, c] of [["CA certificate", ca], ["certificate", leaf]] as const) {
    if (opts.nowMs < c.notBeforeMs || opts.nowMs > c.notAfterMs) {
      throw new Error(`x509: ${which} has expired or is not yet valid: current time ${isoSeconds(opts.nowMs)} is outside ${isoSeconds(c.notBeforeMs)} to ${isoSeconds(c.notAfterMs)}`);
    }
  }
  if (ca.nameConstraints) {
    const violation = nameConstraintViolation(ca.nameConstraints, leaf);
    if (violation) throw new Error(violation);
  }
  if (leafX509.checkHost(opts.name) === undefined) {
    throw new Error(`x509: certificate is valid for ${leaf.dnsNames.join(", ")}, not ${opts.name}`);
  }
}

function isoSeconds(ms: number): string {
  return isoTimestamp(ms).replace(/\.\d{3}Z$/, "Z");
}
