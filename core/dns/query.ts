// A fast reader for the common query shape: one question, no answer or
// authority records, at most one additional (the EDNS0 OPT). Anything else
// returns undefined and the server falls back to dns-packet's decoder.
// Pure: bytes in, plain values out; never throws.

export interface ParsedQuery {
  id: number;
  /** Header flags word (QR, opcode, AA, TC, RD, …, rcode). */
  flags: number;
  /** Question name without the trailing dot, as sent (case kept). */
  name: string;
  qtype: number;
  qclass: number;
  /** The client's EDNS0 UDP payload size when it sent an OPT record. */
  ednsSize?: number;
}

const typeNames: Record<number, string> = {
  1: "A",
  2: "NS",
  5: "CNAME",
  6: "SOA",
  12: "PTR",
  15: "MX",
  16: "TXT",
  28: "AAAA",
  33: "SRV",
  35: "NAPTR",
  255: "ANY",
};

/** dns-packet's name for a type number ("UNKNOWN_n" for the rest). */
export function typeName(qtype: number): string {
  return typeNames[qtype] ?? `UNKNOWN_${qtype}`;
}

/** Scratch space for the name's character codes (reused: no allocation per query). */
const codes: number[] = [];

export function parseQuery(b: Uint8Array): ParsedQuery | undefined {
  if (b.length < 17) return undefined;
  const qd = (b[4]! << 8) | b[5]!;
  const an = (b[6]! << 8) | b[7]!;
  const ns = (b[8]! << 8) | b[9]!;
  const ar = (b[10]! << 8) | b[11]!;
  if (qd !== 1 || an !== 0 || ns !== 0 || ar > 1) return undefined;
  let off = 12;
  codes.length = 0;
  for (;;) {
    if (off >= b.length) return undefined;
    const len = b[off]!;
    off++;
    if (len === 0) break;
    if (len > 63 || off + len > b.length) return undefined;
    for (let i = 0; i < len; i++) {
      const c = b[off + i]!;
      // Plain printable ASCII only, and no dots inside labels; others take the slow path.
      if (c <= 0x20 || c >= 0x7f || c === 0x2e || c === 0x5c) return undefined;
    }
    if (codes.length > 0) codes.push(0x2e);
    for (let i = 0; i < len; i++) codes.push(b[off + i]!);
    off += len;
    if (codes.length > 253) return undefined;
  }
  const name = String.fromCharCode.apply(null, codes);
  if (off + 4 > b.length) return undefined;
  const qtype = (b[off]! << 8) | b[off + 1]!;
  const qclass = (b[off + 2]! << 8) | b[off + 3]!;
  off += 4;
  let ednsSize: number | undefined;
  if (ar === 1) {
    // OPT: root name (0), type 41, class = UDP size, ttl (4), rdlength, rdata.
    if (off + 11 > b.length || b[off] !== 0) return undefined;
    const type = (b[off + 1]! << 8) | b[off + 2]!;
    if (type !== 41) return undefined;
    ednsSize = Math.max(512, (b[off + 3]! << 8) | b[off + 4]!);
    const rdlen = (b[off + 9]! << 8) | b[off + 10]!;
    off += 11 + rdlen;
    if (off > b.length) return undefined;
  }
  if (off !== b.length) return undefined;
  return { id: (b[0]! << 8) | b[1]!, flags: (b[2]! << 8) | b[3]!, name, qtype, qclass, ednsSize };
}
