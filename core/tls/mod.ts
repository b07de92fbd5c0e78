// Certificates for agent TLS (`cairn tls ca create`, `cairn tls cert create`):
// a DER encoder, X.509 building and reading, and issuing on node:crypto.
export * from "./der.ts";
export * from "./x509.ts";
export { generateCa, generateCert, generatePrivateKey, parseCaPem, parseSigner, verifyCert } from "./generate_node.ts";
export type { CaOptions, CertOptions } from "./generate_node.ts";
