// What `cairn debug` takes out of its bundle before writing it, on top of
// what the agent already hides (its sanitized config shows secrets as
// "hidden", its heap snapshot has its keys and the caller's token cut out):
// any string field whose name says it holds a secret, and every such value,
// plus the token the command itself used, wherever else it appears (log
// lines, metrics labels).
import { replaceAcrossChunks } from "../core/http/agent_debug.ts";

/** Field names that hold secrets in Consul's and cairn's JSON (tokens, gossip keys, TLS keys, passwords). */
const secretField = /token|secret|password|passwd|encrypt|private.?key|credential|signing.?key/i;

/** What a redacted value becomes: Consul's sanitized runtime config writes "hidden". */
export const hidden = "hidden";

/** Values that are facts about a secret, not the secret: `"encrypted": "true"` stays. */
function isSecretValue(v: string): boolean {
  return v !== "" && v !== hidden && v !== "true" && v !== "false";
}

/**
 * A copy of `value` with every string under a secret-looking field name
 * replaced by "hidden"; the values replaced are added to `found`.
 */
export function redactJson(value: unknown, found: Set<string> = new Set()): unknown {
  if (Array.isArray(value)) return value.map((v) => redactJson(v, found));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (secretField.test(k) && typeof v === "string" && isSecretValue(v)) {
      found.add(v);
      out[k] = hidden;
    } else if (secretField.test(k) && Array.isArray(v) && v.every((x) => typeof x === "string")) {
      for (const x of v as string[]) if (isSecretValue(x)) found.add(x);
      out[k] = (v as string[]).map((x) => (isSecretValue(x) ? hidden : x));
    } else if (secretField.test(k) && typeof v === "object" && v !== null) {
      // A block of secrets (`ACLTokens: { Agent: "…" }`): every string in it.
      out[k] = hideAll(v, found);
    } else out[k] = redactJson(v, found);
  }
  return out;
}

function hideAll(value: unknown, found: Set<string>): unknown {
  if (typeof value === "string") {
    if (!isSecretValue(value)) return value;
    found.add(value);
    return hidden;
  }
  if (Array.isArray(value)) return value.map((v) => hideAll(v, found));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hideAll(v, found)]));
}

/** Every occurrence of each secret (4 characters or more: shorter ones would hit everything), also JSON-escaped, replaced by "hidden". */
export function scrubText(text: string, secrets: Iterable<string>): string {
  return [...scrubChunks([text], secrets)].join("");
}

/** The strings scrubText looks for: each secret as written and as inside a JSON string. */
function needlesOf(secrets: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    if (s.length < 4) continue;
    out.add(s);
    out.add(JSON.stringify(s).slice(1, -1));
  }
  return [...out];
}

/**
 * scrubText over a sequence of chunks (a file read piece by piece), a secret
 * split between two chunks included: each step keeps back the last
 * (longest needle - 1) characters. `seen.replaced` tells whether anything was.
 */
export function scrubChunks(chunks: Iterable<string>, secrets: Iterable<string>, seen: { replaced: boolean } = { replaced: false }): Generator<string> {
  return replaceAcrossChunks(chunks, needlesOf(secrets), hidden, seen);
}
