// `cairn tls ca create` and `cairn tls cert create`, as consul
// command/tls/ca/create and command/tls/cert/create: the same flags,
// defaults, file names, refusals and console lines, and certificates with
// the subject, SANs and extensions Consul's tlsutil puts in (core/tls).
// Files go to the working directory, as Consul's.
import { statSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { writeFileDurable } from "../core/durable_node.ts";
import { errorMessage } from "../core/errors.ts";
import { parseIp } from "../core/gossip/wire/addr.ts";
import { generateCa, generateCert, verifyCert } from "../core/tls/generate_node.ts";
import type { ExtKeyUsage } from "../core/tls/x509.ts";
import { parseCommandFlags } from "./_command.ts";
import { bool, formatHelp, list, num, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";

export { TLS_CA_HELP, TLS_CERT_HELP, TLS_HELP } from "./tls_help.ts";

const SERVER_WARNING = `==> WARNING: Server Certificates grants authority to become a
    server and access all state in the cluster including root keys
    and all ACL tokens. Do not distribute them to production hosts
    that are not server nodes. Store them as securely as CA keys.
`;

/** Go's os.IsNotExist after os.Stat: any other failure (a permission error) counts as "exists". */
function fileDoesNotExist(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false }) === undefined;
  } catch {
    return false;
  }
}

/** A read error in Go's words ("open x: no such file or directory") where node's code is a common one. */
function readError(path: string, err: unknown): string {
  const code = (err as { code?: string } | null)?.code;
  const text: Record<string, string> = { ENOENT: "no such file or directory", EACCES: "permission denied", EISDIR: "is a directory" };
  if (code && text[code]) return `open ${path}: ${text[code]}`;
  return errorMessage(err);
}

function positiveDays(days: number, io: CliIo): boolean {
  if (days >= 1) return true;
  io.stderr(`Invalid -days ${days}: a certificate must be valid for at least one day\n`);
  return false;
}

function tooMany(args: readonly string[], io: CliIo): boolean {
  if (args.length === 0) return false;
  io.stderr(`Too many arguments (expected 0, got ${args.length})\n`);
  return true;
}

const CA_FLAGS: readonly FlagSpec[] = [
  { name: "days", kind: "int", valueName: "int", usage: "Number of days the CA is valid for. Defaults to 1825 days (approximately 5 years)." },
  {
    name: "name-constraint",
    kind: "bool",
    usage:
      "Enables X.509 name constraints for the CA. If used, the CA only signs certificates for localhost and the domains specified by -domain and -additional-name-constraint. If the HTTP API is served over HTTPS under another DNS name, add it with -additional-name-constraint. Defaults to false.",
  },
  {
    name: "domain",
    kind: "string",
    valueName: "string",
    usage:
      "The DNS domain of the cluster that agents are configured with. Defaults to consul. Names the files (<domain>-agent-ca.pem); in the certificate only used when -name-constraint is set. Additional domains can be passed with -additional-name-constraint.",
  },
  {
    name: "cluster-id",
    kind: "string",
    valueName: "string",
    usage: "ID of the cluster. Sets the CA's URI with the SPIFFE ID composed of the cluster ID and domain (specified by -domain or 'consul' by default).",
  },
  { name: "common-name", kind: "string", valueName: "string", usage: "Common Name of CA. Defaults to Consul Agent CA <serial number>." },
  {
    name: "additional-name-constraint",
    kind: "list",
    valueName: "value",
    usage: "Add name constraints for the CA. Results in rejecting certificates for other DNS than specified. Can be used multiple times. Only used in combination with -name-constraint.",
  },
];

const CA_HELP = `
Usage: cairn tls ca create [options]

  Create a new CA for agent TLS: a self-signed ECDSA P-256 certificate and
  its key, in the working directory.

  $ cairn tls ca create
  ==> Saved consul-agent-ca.pem
  ==> Saved consul-agent-ca-key.pem
`;

export const tlsCaCreate: Command = {
  name: "tls ca create",
  synopsis: "Create a new consul CA",
  help: () => formatHelp(CA_HELP, CA_FLAGS),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(tlsCaCreate, args, CA_FLAGS, io);
    if (typeof p === "number") return p;
    if (tooMany(p.positionals, io)) return 1;
    const days = num(p, "days") ?? 1825;
    const domain = str(p, "domain", "consul");
    if (!positiveDays(days, io)) return 1;
    const certFileName = `${domain}-agent-ca.pem`;
    const pkFileName = `${domain}-agent-ca-key.pem`;
    for (const f of [certFileName, pkFileName]) {
      if (!fileDoesNotExist(f)) {
        io.stderr(`${f} already exists.\n`);
        return 1;
      }
    }
    const additional = list(p, "additional-name-constraint");
    const constrained = bool(p, "name-constraint");
    if (additional.length > 0 && !constrained) io.stderr("==> WARNING: -additional-name-constraint is only used with -name-constraint: ignored\n");
    // Consul's order: the additional constraints, then the domain and localhost.
    const constraints = constrained ? [...additional, domain, "localhost"] : [];
    const clusterId = str(p, "cluster-id");
    const { certPem, keyPem } = generateCa({
      days,
      nowMs: Date.now(),
      commonName: str(p, "common-name") || undefined,
      permittedDnsDomains: constraints,
      clusterId: clusterId ? clusterId.toLowerCase() : undefined,
      domain: domain.toLowerCase(),
    });
    await writeFileDurable(resolve(certFileName), certPem, { mode: 0o666 });
    io.stdout(`==> Saved ${certFileName}\n`);
    await writeFileDurable(resolve(pkFileName), keyPem, { mode: 0o600 });
    io.stdout(`==> Saved ${pkFileName}\n`);
    return 0;
  },
};

const CERT_FLAGS: readonly FlagSpec[] = [
  { name: "ca", kind: "string", valueName: "string", usage: "Provide path to the ca. Defaults to #DOMAIN#-agent-ca.pem." },
  { name: "key", kind: "string", valueName: "string", usage: "Provide path to the key. Defaults to #DOMAIN#-agent-ca-key.pem." },
  { name: "server", kind: "bool", usage: "Generate server certificate." },
  { name: "client", kind: "bool", usage: "Generate client certificate." },
  {
    name: "node",
    kind: "string",
    valueName: "string",
    usage: "When generating a server cert and this is set an additional dns name is included of the form <node>.server.<datacenter>.<domain>.",
  },
  { name: "cli", kind: "bool", usage: "Generate cli certificate." },
  { name: "days", kind: "int", valueName: "int", usage: "Provide number of days the certificate is valid for from now on. Defaults to 1 year." },
  { name: "dc", kind: "string", valueName: "string", usage: "Provide the datacenter. Matters only for -server certificates. Defaults to dc1." },
  { name: "domain", kind: "string", valueName: "string", usage: "Provide the domain. Matters only for -server certificates." },
  {
    name: "additional-dnsname",
    kind: "list",
    valueName: "string",
    usage: "Provide an additional dnsname for Subject Alternative Names. localhost is always included. This flag may be provided multiple times.",
  },
  {
    name: "additional-ipaddress",
    kind: "list",
    valueName: "string",
    usage: "Provide an additional ipaddress for Subject Alternative Names. 127.0.0.1 is always included. This flag may be provided multiple times.",
  },
];

const CERT_HELP = `
Usage: cairn tls cert create [options]

  Create a new certificate

  $ cairn tls cert create -server
  ${SERVER_WARNING.trimEnd().replace(/\n/g, "\n  ")}
  ==> Using consul-agent-ca.pem and consul-agent-ca-key.pem
  ==> Saved dc1-server-consul-0.pem
  ==> Saved dc1-server-consul-0-key.pem
  $ cairn tls cert create -client
  ==> Using consul-agent-ca.pem and consul-agent-ca-key.pem
  ==> Saved dc1-client-consul-0.pem
  ==> Saved dc1-client-consul-0-key.pem
`;

/** IPv4-mapped IPv6 addresses are written as 4 bytes, as Go's ip.To4(). */
function ipBytes(text: string): Uint8Array | undefined {
  const ip = parseIp(text);
  if (ip && ip.length === 16 && ip.subarray(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff) return ip.slice(12);
  return ip;
}

export const tlsCertCreate: Command = {
  name: "tls cert create",
  synopsis: "Create a new certificate",
  help: () => formatHelp(CERT_HELP, CERT_FLAGS),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(tlsCertCreate, args, CERT_FLAGS, io);
    if (typeof p === "number") return p;
    if (tooMany(p.positionals, io)) return 1;
    const ca = str(p, "ca", "#DOMAIN#-agent-ca.pem");
    const key = str(p, "key", "#DOMAIN#-agent-ca-key.pem");
    const server = bool(p, "server");
    const client = bool(p, "client");
    const cli = bool(p, "cli");
    const dc = str(p, "dc", "dc1");
    const domain = str(p, "domain", "consul");
    const node = str(p, "node");
    const days = num(p, "days") ?? 365;
    if (ca === "") {
      io.stderr("Please provide the ca\n");
      return 1;
    }
    if (key === "") {
      io.stderr("Please provide the key\n");
      return 1;
    }
    if ([server, client, cli].filter(Boolean).length !== 1) {
      io.stderr("Please provide either -server, -client, or -cli\n");
      return 1;
    }
    if (node !== "" && !server) {
      io.stderr("-node requires -server\n");
      return 1;
    }
    if (!positiveDays(days, io)) return 1;

    let dnsNames = list(p, "additional-dnsname").map((d) => d.trim()).filter((d) => d.length > 0);
    const ipAddresses: Uint8Array[] = [];
    for (const text of list(p, "additional-ipaddress")) {
      if (text.length === 0) continue;
      const ip = ipBytes(text.trim());
      if (!ip) {
        io.stderr(`Invalid -additional-ipaddress "${text}": not an IP address\n`);
        return 1;
      }
      ipAddresses.push(ip);
    }
    let name: string;
    let kind: string;
    let extKeyUsage: ExtKeyUsage[] = [];
    if (server) {
      name = `server.${dc}.${domain}`;
      kind = "server";
      if (node !== "") dnsNames.push(`${node}.server.${dc}.${domain}`);
      dnsNames.push(name, "localhost");
      ipAddresses.push(Uint8Array.of(127, 0, 0, 1));
      extKeyUsage = ["serverAuth", "clientAuth"];
    } else if (client) {
      name = `client.${dc}.${domain}`;
      kind = "client";
      dnsNames.push(name, "localhost");
      ipAddresses.push(Uint8Array.of(127, 0, 0, 1));
      extKeyUsage = ["clientAuth", "serverAuth"];
    } else {
      // Consul's -cli certificate: its own name and localhost only (additional DNS names are dropped), no extended key usage.
      name = `cli.${dc}.${domain}`;
      kind = "cli";
      if (dnsNames.length > 0) io.stderr("==> WARNING: -additional-dnsname is not used with -cli: ignored\n");
      dnsNames = [name, "localhost"];
    }

    const prefix = `${dc}-${kind}-${domain}`;
    let certFileName = "";
    let pkFileName = "";
    const max = 10000;
    for (let i = 0; i <= max; i++) {
      const tmpCert = `${prefix}-${i}.pem`;
      const tmpPk = `${prefix}-${i}-key.pem`;
      if (fileDoesNotExist(tmpCert) && fileDoesNotExist(tmpPk)) {
        certFileName = tmpCert;
        pkFileName = tmpPk;
        break;
      }
      if (i === max) {
        io.stderr("Could not find a filename that doesn't already exist\n");
        return 1;
      }
    }

    const caFile = ca.replace("#DOMAIN#", domain);
    const keyFile = key.replace("#DOMAIN#", domain);
    let caPem: string;
    let caKeyPem: string;
    try {
      caPem = readFileSync(caFile, "utf8");
    } catch (err) {
      io.stderr(`Error reading CA: ${readError(caFile, err)}\n`);
      return 1;
    }
    try {
      caKeyPem = readFileSync(keyFile, "utf8");
    } catch (err) {
      io.stderr(`Error reading CA key: ${readError(keyFile, err)}\n`);
      return 1;
    }
    if (server) io.stdout(SERVER_WARNING);
    io.stdout(`==> Using ${caFile} and ${keyFile}\n`);

    let certPem: string;
    let keyPem: string;
    const nowMs = Date.now();
    try {
      ({ certPem, keyPem } = generateCert({ caPem, caKeyPem, name, days, nowMs, dnsNames, ipAddresses, extKeyUsage }));
      verifyCert({ caPem, certPem, name, nowMs });
    } catch (err) {
      io.stderr(`${errorMessage(err)}\n`);
      return 1;
    }
    await writeFileDurable(resolve(certFileName), certPem, { mode: 0o666 });
    io.stdout(`==> Saved ${certFileName}\n`);
    await writeFileDurable(resolve(pkFileName), keyPem, { mode: 0o600 });
    io.stdout(`==> Saved ${pkFileName}\n`);
    return 0;
  },
};
