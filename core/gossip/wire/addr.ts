// IP addresses on the wire are raw bytes (4 for IPv4, 16 for IPv6); the
// protocol core uses "ip:port" strings. Pure conversions both ways.

/** Raw IP bytes to text: dotted IPv4 (also for v4-mapped IPv6), else IPv6. */
export function ipToString(ip: Uint8Array): string {
  if (ip.length === 4) return `${ip[0]}.${ip[1]}.${ip[2]}.${ip[3]}`;
  if (ip.length !== 16) return "";
  const mapped = ip.subarray(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff;
  if (mapped) return ipToString(ip.subarray(12));
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((ip[i]! << 8) | ip[i + 1]!);
  // Compress the longest run (>= 2) of zero groups.
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

/** Text IP to raw bytes (4 or 16); undefined if it is not an IP literal. */
export function parseIp(text: string): Uint8Array | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) {
    const parts = text.split(".").map(Number);
    if (parts.some((p) => p > 255)) return undefined;
    return Uint8Array.from(parts);
  }
  if (!text.includes(":")) return undefined;
  let head = text;
  let tail = "";
  const dbl = text.indexOf("::");
  if (dbl >= 0) {
    head = text.slice(0, dbl);
    tail = text.slice(dbl + 2);
    if (tail.includes("::")) return undefined;
  }
  const parseGroups = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    const items = s.split(":");
    for (let i = 0; i < items.length; i++) {
      const g = items[i]!;
      if (i === items.length - 1 && g.includes(".")) {
        const v4 = parseIp(g);
        if (!v4 || v4.length !== 4) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
        out.push(parseInt(g, 16));
      }
    }
    return out;
  };
  const h = parseGroups(head);
  const t = parseGroups(tail);
  if (!h || !t) return undefined;
  const fill = 8 - h.length - t.length;
  if (dbl >= 0 ? fill < 1 : fill !== 0) return undefined;
  const groups = [...h, ...new Array<number>(dbl >= 0 ? fill : 0).fill(0), ...t];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  return out;
}

/** "ip:port" / "[v6]:port" -> parts; undefined if malformed. */
export function splitHostPort(addr: string): { host: string; port: number } | undefined {
  let host: string;
  let portText: string;
  if (addr.startsWith("[")) {
    const end = addr.indexOf("]");
    if (end < 0 || addr[end + 1] !== ":") return undefined;
    host = addr.slice(1, end);
    portText = addr.slice(end + 2);
  } else {
    const i = addr.lastIndexOf(":");
    if (i <= 0) return undefined;
    host = addr.slice(0, i);
    portText = addr.slice(i + 1);
  }
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port > 65535) return undefined;
  return { host, port };
}

export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Raw IP + port -> "ip:port". */
export function addrToString(ip: Uint8Array, port: number): string {
  return joinHostPort(ipToString(ip), port);
}

/** "ip:port" -> raw IP + port; undefined unless the host is an IP literal. */
export function parseAddr(addr: string): { ip: Uint8Array; port: number } | undefined {
  const hp = splitHostPort(addr);
  if (!hp) return undefined;
  const ip = parseIp(hp.host);
  return ip ? { ip, port: hp.port } : undefined;
}
