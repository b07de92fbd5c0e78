// JSON with uint64 fields (KV flags) kept exact. JSON.parse reads every
// number as a double, so a flag above 2^53 (Terraform's lock flag
// 0x2ddccbc058a50c18, Consul's lock and semaphore flags) would come back
// rounded; JSON.stringify cannot write a bigint at all. The agent's HTTP API
// is exact; these keep the client exact too.

/** A uint64 as the client holds it: a number while it is exact, else a bigint. */
export type Uint64 = number | bigint;

const maxUint64 = (1n << 64n) - 1n;

/** A uint64 from JSON or text: a safe integer, or digits up to 2^64 - 1; undefined otherwise. */
export function toUint64(v: unknown): Uint64 | undefined {
  if (typeof v === "number") return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  if (typeof v === "bigint") return v >= 0n && v <= maxUint64 ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v) : undefined;
  if (typeof v !== "string" || !/^\+?\d+$/.test(v.trim())) return undefined;
  return toUint64(BigInt(v.trim()));
}

/** JSON.parse, with the integers of the named fields that are too long for a double kept as digit strings. */
export function parseJsonExact(text: string, fields: readonly string[]): unknown {
  // Only a field name in quotes followed by a colon matches: keys and values
  // inside JSON strings have their quotes escaped, so they cannot.
  const names = fields.map((f) => f.replace(/[^A-Za-z0-9_]/g, "")).join("|");
  return JSON.parse(text.replace(new RegExp(`("(?:${names})"\\s*:\\s*)(\\d{16,})`, "g"), '$1"$2"'));
}

const marker = "\u0000uint64:";

/** JSON.stringify that writes bigints as bare integers (as Go writes a uint64). */
export function stringifyExact(value: unknown, indent?: string): string {
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${marker}${v}` : v), indent);
  // The marker's NUL is written as \u0000, which no key or value the agent accepts contains.
  return text.replace(/"\\u0000uint64:(\d+)"/g, "$1");
}
