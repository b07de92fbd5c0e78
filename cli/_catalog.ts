// Shared bits of the catalog commands: `-node-meta key=value` flags and
// Consul's `k=v, k=v` map rendering.

/** `-node-meta key=value` (repeatable) → map; a value without "=" is an error message. */
export function parseNodeMetaFlags(values: readonly string[]): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const kv of values) {
    const at = kv.indexOf("=");
    if (at <= 0) return `Error parsing -node-meta: expected key=value, got ${JSON.stringify(kv)}`;
    out[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return out;
}

/** Consul's mapToKV: sorted `k=v` pairs joined by ", ". */
export function mapToKv(m: Record<string, string> | null | undefined): string {
  const keys = Object.keys(m ?? {}).sort();
  return keys.map((k) => `${k}=${m![k]}`).join(", ");
}
