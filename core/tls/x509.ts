// X.509 v3 certificates (RFC 5280) as Consul's `tls ca create` and `tls cert
// create` make them through Go's crypto/x509: building the to-be-signed part
// with the extensions Go writes, in Go's order, wrapping it with a signature,
// reading back what issuing needs from a CA certificate (subject, key id, name
// constraints), and PEM. Pure: keys, randomness, the clock and signing are
// the caller's (core/tls/generate_node.ts).
import { decodeBase64, encodeBase64 } from "../api/base64.ts";
import { concatBytes } from "../bytes.ts";
import {
  bitString,
  boolean,
  children,
  context,
  DerError,
  directoryString,
  ia5String,
  namedBits,
  octetString,
  oid,
  oidText,
  readElement,
  readTime,
  sequence,
  set,
  smallInteger,
  TAG,
  time,
  unsignedInteger,
} from "./der.ts";
import type { Element } from "./der.ts";

export const OID = {
  commonName: "2.5.4.3",
  country: "2.5.4.6",
  locality: "2.5.4.7",
  province: "2.5.4.8",
  streetAddress: "2.5.4.9",
  organization: "2.5.4.10",
  organizationalUnit: "2.5.4.11",
  postalCode: "2.5.4.17",
  subjectKeyId: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  nameConstraints: "2.5.29.30",
  authorityKeyId: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  ecdsaWithSha384: "1.2.840.10045.4.3.3",
  ecdsaWithSha512: "1.2.840.10045.4.3.4",
  sha256WithRsa: "1.2.840.113549.1.1.11",
  ed25519: "1.3.101.112",
} as const;

/** KeyUsage bits (RFC 5280 §4.2.1.3), as Go's x509.KeyUsage. */
export const KEY_USAGE = {
  digitalSignature: 1 << 0,
  keyEncipherment: 1 << 2,
  certSign: 1 << 5,
  crlSign: 1 << 6,
} as const;

export type ExtKeyUsage = "serverAuth" | "clientAuth";

// ---- building ----

/** One attribute of a distinguished name; each goes in its own RDN, in the order given. */
export interface NameAttribute {
  type: string;
  value: string;
}

/**
 * The subject order Go's pkix.Name writes: C, ST, L, STREET, POSTALCODE, O,
 * OU, then CN.
 */
export interface SubjectFields {
  country?: string;
  province?: string;
  locality?: string;
  streetAddress?: string;
  postalCode?: string;
  organization?: string;
  organizationalUnit?: string;
  commonName?: string;
}

export function encodeName(fields: SubjectFields): Uint8Array {
  const order: [keyof SubjectFields, string][] = [
    ["country", OID.country],
    ["province", OID.province],
    ["locality", OID.locality],
    ["streetAddress", OID.streetAddress],
    ["postalCode", OID.postalCode],
    ["organization", OID.organization],
    ["organizationalUnit", OID.organizationalUnit],
    ["commonName", OID.commonName],
  ];
  const rdns = order
    .filter(([k]) => fields[k] !== undefined)
    .map(([k, type]) => set(sequence(oid(type), directoryString(fields[k]!))));
  return sequence(...rdns);
}

export function algorithmIdentifier(algorithm: string): Uint8Array {
  // RSA signature algorithms carry an explicit NULL; ECDSA and Ed25519 none (RFC 5758 §3.2, RFC 8410 §3).
  return algorithm === OID.sha256WithRsa ? sequence(oid(algorithm), Uint8Array.of(TAG.null, 0)) : sequence(oid(algorithm));
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

export function keyUsageExtension(bits: number): Uint8Array {
  return extension(OID.keyUsage, true, namedBits(bits));
}

export function extKeyUsageExtension(usages: readonly ExtKeyUsage[]): Uint8Array {
  return extension(OID.extKeyUsage, false, sequence(...usages.map((u) => oid(OID[u]))));
}

/** Go leaves cA out when false and pathLen out when unset: a leaf's value is an empty SEQUENCE. */
export function basicConstraintsExtension(isCa: boolean): Uint8Array {
  return extension(OID.basicConstraints, true, isCa ? sequence(boolean(true)) : sequence());
}

export function subjectKeyIdExtension(id: Uint8Array): Uint8Array {
  return extension(OID.subjectKeyId, false, octetString(id));
}

export function authorityKeyIdExtension(id: Uint8Array): Uint8Array {
  return extension(OID.authorityKeyId, false, sequence(context(0, id, false)));
}

export interface AltNames {
  dnsNames?: readonly string[];
  /** Raw addresses: 4 bytes for IPv4, 16 for IPv6. */
  ipAddresses?: readonly Uint8Array[];
  uris?: readonly string[];
}

/** GeneralNames in Go's order: DNS names, then IP addresses, then URIs. */
export function subjectAltNameExtension(names: AltNames): Uint8Array {
  const enc = new TextEncoder();
  const items = [
    ...(names.dnsNames ?? []).map((d) => context(2, ia5Body(d), false)),
    ...(names.ipAddresses ?? []).map((ip) => context(7, ip, false)),
    ...(names.uris ?? []).map((u) => context(6, enc.encode(u), false)),
  ];
  return extension(OID.subjectAltName, false, sequence(...items));
}

function ia5Body(s: string): Uint8Array {
  return readElement(ia5String(s)).content;
}

/** Permitted DNS subtrees (RFC 5280 §4.2.1.10), as Go writes PermittedDNSDomains. */
export function nameConstraintsExtension(permittedDnsDomains: readonly string[], critical: boolean): Uint8Array {
  const subtrees = permittedDnsDomains.map((d) => sequence(context(2, ia5Body(d), false)));
  return extension(OID.nameConstraints, critical, sequence(context(0, concatBytes(subtrees), true)));
}

export interface TbsTemplate {
  /** Big-endian magnitude of the (positive) serial number. */
  serial: Uint8Array;
  /** OID of the signature algorithm (OID.ecdsaWithSha256, ...). */
  signatureAlgorithm: string;
  /** DER Name of the issuer (the CA's subject, byte for byte). */
  issuer: Uint8Array;
  subject: Uint8Array;
  notBeforeMs: number;
  notAfterMs: number;
  /** DER SubjectPublicKeyInfo. */
  subjectPublicKeyInfo: Uint8Array;
  /** DER Extension elements, in the order to write them. */
  extensions: readonly Uint8Array[];
}

export function encodeTbsCertificate(t: TbsTemplate): Uint8Array {
  return sequence(
    context(0, smallInteger(2), true), // v3
    unsignedInteger(t.serial),
    algorithmIdentifier(t.signatureAlgorithm),
    t.issuer,
    sequence(time(t.notBeforeMs), time(t.notAfterMs)),
    t.subject,
    t.subjectPublicKeyInfo,
    ...(t.extensions.length > 0 ? [context(3, sequence(...t.extensions), true)] : []),
  );
}

export function encodeCertificate(tbs: Uint8Array, signatureAlgorithm: string, signature: Uint8Array): Uint8Array {
  return sequence(tbs, algorithmIdentifier(signatureAlgorithm), bitString(signature));
}

// ---- reading ----

export interface CertificateInfo {
  tbs: Uint8Array;
  serial: Uint8Array;
  issuer: Uint8Array;
  subject: Uint8Array;
  notBeforeMs: number;
  notAfterMs: number;
  subjectPublicKeyInfo: Uint8Array;
  /** Extension OID → criticality and the extnValue's content. */
  extensions: Map<string, { critical: boolean; value: Uint8Array }>;
  isCa: boolean;
  subjectKeyId?: Uint8Array;
  dnsNames: string[];
  ipAddresses: Uint8Array[];
  /** Name constraints (absent when the certificate has none). */
  nameConstraints?: NameConstraints;
}

export interface NameConstraints {
  permittedDns: string[];
  excludedDns: string[];
  /** Address and mask of equal length. */
  permittedIp: { ip: Uint8Array; mask: Uint8Array }[];
  excludedIp: { ip: Uint8Array; mask: Uint8Array }[];
}

function expect(e: Element | undefined, tag: number, what: string): Element {
  if (!e || e.tag !== tag) throw new DerError(`Invalid certificate: expected ${what}`);
  return e;
}

/** IA5String bytes as text (one character per byte; no decoder built at start). */
function ia5Text(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}

/** Reads a DER certificate; throws DerError naming what is malformed. */
export function parseCertificate(der: Uint8Array): CertificateInfo {
  const cert = expect(readElement(der), TAG.sequence, "a SEQUENCE");
  const [tbsEl] = children(cert.content);
  const tbs = expect(tbsEl, TAG.sequence, "tbsCertificate");
  const f = children(tbs.content);
  let i = 0;
  if (f[0]?.tag === 0xa0) i++; // version
  const serial = expect(f[i++], TAG.integer, "serialNumber").content;
  expect(f[i++], TAG.sequence, "signature algorithm");
  const issuer = expect(f[i++], TAG.sequence, "issuer").raw;
  const validity = children(expect(f[i++], TAG.sequence, "validity").content);
  const subject = expect(f[i++], TAG.sequence, "subject").raw;
  const spki = expect(f[i++], TAG.sequence, "subjectPublicKeyInfo").raw;
  if (validity.length !== 2) throw new DerError("Invalid certificate: validity needs notBefore and notAfter");
  const info: CertificateInfo = {
    tbs: tbs.raw,
    serial,
    issuer,
    subject,
    notBeforeMs: readTime(validity[0]!),
    notAfterMs: readTime(validity[1]!),
    subjectPublicKeyInfo: spki,
    extensions: new Map(),
    isCa: false,
    dnsNames: [],
    ipAddresses: [],
  };
  const extsEl = f.slice(i).find((e) => e.tag === 0xa3);
  if (extsEl) {
    for (const ext of children(expect(children(extsEl.content)[0], TAG.sequence, "extensions").content)) {
      const parts = children(ext.content);
      const id = oidText(expect(parts[0], TAG.oid, "extension id").content);
      const critical = parts.length === 3 && parts[1]!.tag === TAG.boolean && parts[1]!.content[0] !== 0;
      const value = expect(parts[parts.length - 1], TAG.octetString, "extension value").content;
      info.extensions.set(id, { critical, value });
    }
  }
  const bc = info.extensions.get(OID.basicConstraints);
  if (bc) {
    const first = children(expect(readElement(bc.value), TAG.sequence, "basicConstraints").content)[0];
    info.isCa = first?.tag === TAG.boolean && first.content[0] !== 0;
  }
  const ski = info.extensions.get(OID.subjectKeyId);
  if (ski) info.subjectKeyId = expect(readElement(ski.value), TAG.octetString, "subjectKeyIdentifier").content;
  const san = info.extensions.get(OID.subjectAltName);
  if (san) {
    for (const g of children(expect(readElement(san.value), TAG.sequence, "subjectAltName").content)) {
      if (g.tag === 0x82) info.dnsNames.push(ia5Text(g.content));
      else if (g.tag === 0x87) info.ipAddresses.push(g.content);
    }
  }
  const nc = info.extensions.get(OID.nameConstraints);
  if (nc) {
    const out: NameConstraints = { permittedDns: [], excludedDns: [], permittedIp: [], excludedIp: [] };
    for (const part of children(expect(readElement(nc.value), TAG.sequence, "nameConstraints").content)) {
      const permitted = part.tag === 0xa0;
      if (!permitted && part.tag !== 0xa1) continue;
      for (const subtree of children(part.content)) {
        const base = children(expect(subtree, TAG.sequence, "GeneralSubtree").content)[0];
        if (base?.tag === 0x82) (permitted ? out.permittedDns : out.excludedDns).push(ia5Text(base.content));
        else if (base?.tag === 0x87 && (base.content.length === 8 || base.content.length === 32)) {
          const n = base.content.length / 2;
          (permitted ? out.permittedIp : out.excludedIp).push({ ip: base.content.subarray(0, n), mask: base.content.subarray(n) });
        }
      }
    }
    info.nameConstraints = out;
  }
  return info;
}

// ---- name constraints ----

/** Go's matchDomainConstraint: "example.com" matches itself and its subdomains; ".example.com" only subdomains. */
export function matchesDnsConstraint(name: string, constraint: string): boolean {
  if (constraint === "") return true;
  const host = name.toLowerCase();
  const c = constraint.toLowerCase();
  if (c.startsWith(".")) return host.endsWith(c) && host.length > c.length;
  return host === c || host.endsWith(`.${c}`);
}

function matchesIpConstraint(ip: Uint8Array, range: { ip: Uint8Array; mask: Uint8Array }): boolean {
  if (ip.length !== range.ip.length) return false;
  return ip.every((b, i) => (b & range.mask[i]!) === (range.ip[i]! & range.mask[i]!));
}

/**
 * Why the CA's name constraints forbid one of the leaf's names, in Go's
 * words; undefined when every name is allowed. Each kind of name is checked
 * only against constraints of its own kind, as Go and OpenSSL do.
 */
export function nameConstraintViolation(nc: NameConstraints, names: { dnsNames: readonly string[]; ipAddresses: readonly Uint8Array[] }): string | undefined {
  const prefix = "x509: a root or intermediate certificate is not authorized to sign for this name:";
  for (const d of names.dnsNames) {
    const ex = nc.excludedDns.find((c) => matchesDnsConstraint(d, c));
    if (ex !== undefined) return `${prefix} DNS name "${d}" is excluded by constraint "${ex}"`;
    if (nc.permittedDns.length > 0 && !nc.permittedDns.some((c) => matchesDnsConstraint(d, c))) {
      return `${prefix} DNS name "${d}" is not permitted by any constraint`;
    }
  }
  for (const ip of names.ipAddresses) {
    if (nc.excludedIp.some((r) => matchesIpConstraint(ip, r)) || (nc.permittedIp.length > 0 && !nc.permittedIp.some((r) => matchesIpConstraint(ip, r)))) {
      return `${prefix} IP address "${formatIp(ip)}" is not permitted by any constraint`;
    }
  }
  return undefined;
}

function formatIp(ip: Uint8Array): string {
  if (ip.length === 4) return Array.from(ip).join(".");
  const groups: string[] = [];
  for (let i = 0; i < ip.length; i += 2) groups.push(((ip[i]! << 8) | ip[i + 1]!).toString(16));
  return groups.join(":");
}

// ---- PEM (RFC 7468) ----

/** PEM with 64-character lines, as Go's pem.Encode. */
export function pemEncode(type: string, der: Uint8Array): string {
  const b64 = encodeBase64(der);
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${type}-----\n${lines.join("\n")}\n-----END ${type}-----\n`;
}

/** The first PEM block in `text`, or undefined when there is none (as Go's pem.Decode). */
export function pemDecodeFirst(text: string): { type: string; der: Uint8Array } | undefined {
  const m = /-----BEGIN ([^-\r\n]+)-----\r?\n((?:[^-]*\r?\n)*?)-----END \1-----/.exec(text);
  if (!m) return undefined;
  const body = m[2]!.split(/\r?\n/).filter((l) => !l.includes(":")).join("");
  const der = decodeBase64(body);
  return der ? { type: m[1]!, der } : undefined;
}
