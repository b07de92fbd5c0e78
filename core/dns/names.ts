// Consul's DNS names (agent/dns.go `dispatch`): which kind of lookup a
// question name asks for. Pure; names are compared lower-case.
//
//   <node>.node[.<dc>].<domain>, <node>.node.<dc>.dc.<domain>
//   [<tag>.]<service>.service[.<dc>].<domain>, …service.<dc>.dc.<domain>
//   _<service>._<tag|tcp|udp>[.service][.<dc>].<domain>   (RFC 2782)
//   <hex-ip>.addr[.<dc>].<domain>
//   <query>.query[.<dc>].<domain>                          (prepared query)
//   <domain>                                               (SOA, NS)
//   d.c.b.a.in-addr.arpa, <32 nibbles>.ip6.arpa            (PTR)

export type ParsedName =
  | { kind: "apex"; domain: string }
  | { kind: "node"; domain: string; node: string; datacenter: string }
  | { kind: "service"; domain: string; service: string; tag: string; datacenter: string }
  | { kind: "addr"; domain: string; address: string; family: 4 | 6; datacenter: string }
  /** A prepared query by ID or name; a name may hold dots (Consul joins the labels). */
  | { kind: "query"; domain: string; query: string; datacenter: string }
  | { kind: "ptr"; address: string }
  /** Under one of our domains but not a name we answer. */
  | { kind: "nxdomain"; domain: string }
  /** Outside our domains: forward to the recursors (or refuse). */
  | { kind: "outside" };

const queryKinds = new Set(["node", "service", "addr", "query", "connect", "ingress", "virtual"]);

/** Lower-case, with exactly one trailing dot (the root is "."). */
export function canonicalName(name: string): string {
  let n = name.toLowerCase();
  if (!n.endsWith(".")) n += ".";
  while (n.length > 1 && n.startsWith(".")) n = n.slice(1);
  return n;
}

/**
 * Classify a question name. `domains` are canonical (`consul.`), the primary
 * first; `datacenter` is the local one, used when the name names none.
 */
export function parseName(name: string, options: { domains: readonly string[]; datacenter: string }): ParsedName {
  const n = canonicalName(name);
  for (const domain of options.domains) {
    if (!domain) continue;
    if (n === domain) return { kind: "apex", domain };
    if (n.endsWith("." + domain)) {
      const labels = n.slice(0, n.length - domain.length - 1).split(".");
      return parseLabels(labels, domain, options.datacenter);
    }
  }
  if (n.endsWith(".in-addr.arpa.") || n.endsWith(".ip6.arpa.")) {
    const address = reverseToAddress(n);
    if (address !== undefined) return { kind: "ptr", address };
  }
  return { kind: "outside" };
}

function parseLabels(labels: string[], domain: string, localDc: string): ParsedName {
  if (labels.some((l) => l.length === 0)) return { kind: "nxdomain", domain };
  let at = -1;
  for (let i = labels.length - 1; i >= 0; i--) {
    if (queryKinds.has(labels[i]!)) {
      at = i;
      break;
    }
  }
  if (at < 0) {
    // RFC 2782 without the `service` label: _web._tcp[.dc].consul.
    if (labels.length >= 2 && labels.length <= 3 && labels[0]!.startsWith("_") && labels[1]!.startsWith("_")) {
      return serviceName(labels.slice(0, 2), domain, labels[2] ?? localDc);
    }
    return { kind: "nxdomain", domain };
  }
  const kind = labels[at]!;
  const parts = labels.slice(0, at);
  let suffixes = labels.slice(at + 1);
  // Consul's locality form for nodes and services (dns.go parseLocality): `<dc>.dc` after the kind.
  if (suffixes.length === 2 && suffixes[1] === "dc" && (kind === "node" || kind === "service")) suffixes = suffixes.slice(0, 1);
  if (suffixes.length > 1 || parts.length === 0) return { kind: "nxdomain", domain };
  const datacenter = suffixes[0] ?? localDc;
  switch (kind) {
    case "node":
      return { kind: "node", domain, node: parts.join("."), datacenter };
    case "service":
      return serviceName(parts, domain, datacenter);
    case "addr": {
      if (parts.length !== 1) return { kind: "nxdomain", domain };
      const address = hexToAddress(parts[0]!);
      if (address === undefined) return { kind: "nxdomain", domain };
      return { kind: "addr", domain, address: address.address, family: address.family, datacenter };
    }
    case "query":
      return { kind: "query", domain, query: parts.join("."), datacenter };
    default:
      // Connect, ingress and virtual IPs are not served.
      return { kind: "nxdomain", domain };
  }
}

function serviceName(parts: string[], domain: string, datacenter: string): ParsedName {
  if (parts.length === 2 && parts[0]!.startsWith("_") && parts[1]!.startsWith("_")) {
    const service = parts[0]!.slice(1);
    let tag = parts[1]!.slice(1);
    if (tag === "tcp" || tag === "udp") tag = "";
    if (!service) return { kind: "nxdomain", domain };
    return { kind: "service", domain, service, tag, datacenter };
  }
  const service = parts[parts.length - 1]!;
  const tag = parts.slice(0, -1).join(".");
  return { kind: "service", domain, service, tag, datacenter };
}

/** `7f000001` → 127.0.0.1; 32 hex digits → an IPv6 address. */
export function hexToAddress(hex: string): { address: string; family: 4 | 6 } | undefined {
  if (!/^[0-9a-f]+$/i.test(hex)) return undefined;
  if (hex.length === 8) {
    const octets: number[] = [];
    for (let i = 0; i < 8; i += 2) octets.push(Number.parseInt(hex.slice(i, i + 2), 16));
    return { address: octets.join("."), family: 4 };
  }
  if (hex.length === 32) {
    const groups: string[] = [];
    for (let i = 0; i < 32; i += 4) groups.push(hex.slice(i, i + 4).toLowerCase());
    return { address: formatIpv6(groups.map((g) => Number.parseInt(g, 16))), family: 6 };
  }
  return undefined;
}

/** The `.addr.` label for an IP address (lower-case hex), or undefined when it is not an IP. */
export function addressToHex(address: string): string | undefined {
  const v4 = parseIpv4(address);
  if (v4) return v4.map((o) => o.toString(16).padStart(2, "0")).join("");
  const v6 = parseIpv6(address);
  if (v6) return v6.map((g) => g.toString(16).padStart(4, "0")).join("");
  return undefined;
}

export function parseIpv4(s: string): number[] | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    out.push(v);
  }
  return out;
}

/** Eight 16-bit groups, or undefined. Accepts `::` and an embedded IPv4 tail. */
export function parseIpv6(s: string): number[] | undefined {
  if (!s.includes(":")) return undefined;
  let text = s;
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    text = text.slice(0, lastColon + 1) + "0";
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (h: string): number[] | undefined => {
    if (h === "") return [];
    const out: number[] = [];
    for (const g of h.split(":")) {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (!head || !rest) return undefined;
  if (tail.length > 0) {
    // The IPv4 tail replaced the last group with "0": drop that placeholder.
    (rest.length > 0 ? rest : head).pop();
  }
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1) return given === 8 ? [...head, ...tail] : undefined;
  if (given > 7) return undefined;
  return [...head, ...new Array<number>(8 - given).fill(0), ...rest, ...tail];
}

/** RFC 5952 text form of eight 16-bit groups. */
export function formatIpv6(groups: number[]): string {
  let bestAt = -1, bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) { bestAt = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestAt < 0) return hex.join(":");
  return `${hex.slice(0, bestAt).join(":")}::${hex.slice(bestAt + bestLen).join(":")}`;
}

/** Canonical text of an IP address (so "::0001" and "::1" compare equal), or undefined. */
export function normalizeAddress(address: string): string | undefined {
  if (parseIpv4(address)) return address;
  const v6 = parseIpv6(address);
  return v6 ? formatIpv6(v6) : undefined;
}

function reverseToAddress(n: string): string | undefined {
  if (n.endsWith(".in-addr.arpa.")) {
    const labels = n.slice(0, -".in-addr.arpa.".length).split(".");
    if (labels.length !== 4) return undefined;
    const addr = labels.reverse().join(".");
    return parseIpv4(addr) ? addr : undefined;
  }
  const labels = n.slice(0, -".ip6.arpa.".length).split(".");
  if (labels.length !== 32 || labels.some((l) => !/^[0-9a-f]$/.test(l))) return undefined;
  const hex = labels.reverse().join("");
  return hexToAddress(hex)?.address;
}

/** The reverse name of an address: `1.0.0.127.in-addr.arpa.`. */
export function addressToReverse(address: string): string | undefined {
  const v4 = parseIpv4(address);
  if (v4) return `${[...v4].reverse().join(".")}.in-addr.arpa.`;
  const hex = addressToHex(address);
  if (!hex) return undefined;
  return `${hex.split("").reverse().join(".")}.ip6.arpa.`;
}
