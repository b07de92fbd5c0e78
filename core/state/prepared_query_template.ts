// Prepared query templates (consul agent/consul/prepared_query/template.go).
// A template's Name is a prefix; a lookup of any name under it renders the
// template for that name: every string in Service may use `${name.full}`,
// `${name.prefix}`, `${name.suffix}`, `${match(N)}` (group N of the
// template's Regexp run over the name) and `${agent.segment}` (always "":
// cairn has no network segments). `$${` is a literal `${`. Pure.

import type { PreparedQuery, ServiceQuery } from "../rpc/methods.ts";
import { queryTemplateTypeNamePrefixMatch } from "../rpc/methods.ts";

type Part =
  | { kind: "text"; text: string }
  | { kind: "var"; name: "name.full" | "name.prefix" | "name.suffix" | "agent.segment" }
  | { kind: "match"; group: number };

const variables: ReadonlySet<string> = new Set(["name.full", "name.prefix", "name.suffix", "agent.segment"]);

/** Parse one template string; throws Error naming what is wrong. */
export function parseInterpolation(text: string): Part[] {
  const parts: Part[] = [];
  let literal = "";
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("$${", i)) {
      literal += "${";
      i += 3;
      continue;
    }
    if (!text.startsWith("${", i)) {
      literal += text[i];
      i++;
      continue;
    }
    const end = text.indexOf("}", i + 2);
    if (end < 0) throw new Error(`unclosed "\${" at offset ${i}`);
    const expr = text.slice(i + 2, end).trim();
    if (literal) parts.push({ kind: "text", text: literal });
    literal = "";
    const m = /^match\(\s*(-?\d+)\s*\)$/.exec(expr);
    if (m) parts.push({ kind: "match", group: Number(m[1]) });
    else if (variables.has(expr)) parts.push({ kind: "var", name: expr as "name.full" });
    else throw new Error(`unknown variable accessed: ${expr}`);
    i = end + 1;
  }
  if (literal) parts.push({ kind: "text", text: literal });
  return parts;
}

/**
 * A Go (RE2) regexp as a JavaScript RegExp: a leading `(?i)`-style flag group
 * becomes flags, `(?P<name>` becomes `(?<name>`. Throws on what JS refuses.
 */
export function goRegexp(source: string): RegExp {
  let src = source;
  let flags = "";
  const lead = /^\(\?([imsU]+)\)/.exec(src);
  if (lead) {
    if (lead[1]!.includes("U")) throw new Error("flag U (ungreedy) is not supported");
    flags = lead[1]!;
    src = src.slice(lead[0].length);
  }
  src = src.replaceAll("(?P<", "(?<");
  return new RegExp(src, flags);
}

export interface RenderContext {
  /** The name that was looked up. */
  name: string;
  /** Groups of the template Regexp over the name ([] when it has none or did not match). */
  matches: readonly string[];
}

function renderString(path: string, text: string, query: PreparedQuery, ctx: RenderContext): string {
  let parts: Part[];
  try {
    parts = parseInterpolation(text);
  } catch (err) {
    throw new Error(`Bad format '${text}' in Service${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let out = "";
  for (const p of parts) {
    if (p.kind === "text") out += p.text;
    else if (p.kind === "match") out += p.group >= 0 && p.group < ctx.matches.length ? ctx.matches[p.group]! : "";
    else if (p.name === "name.full") out += ctx.name;
    else if (p.name === "name.prefix") out += query.name;
    // Go strings.TrimPrefix: case-sensitive, the whole name when it is not a prefix.
    else if (p.name === "name.suffix") out += ctx.name.startsWith(query.name) ? ctx.name.slice(query.name.length) : ctx.name;
  }
  return out;
}

function renderMap(path: string, m: Record<string, string>, query: PreparedQuery, ctx: RenderContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) out[k] = renderString(`${path}[${k}]`, v, query, ctx);
  return out;
}

/** Every string of Service rendered for a name (Consul walks Service with reflection; the same fields here). */
function renderService(query: PreparedQuery, ctx: RenderContext): ServiceQuery {
  const s = query.service;
  const list = (path: string, xs: readonly string[]) => xs.map((x, i) => renderString(`${path}[${i}]`, x, query, ctx));
  let tags = list(".Tags", s.tags);
  if (query.template.removeEmptyTags) tags = tags.filter((t) => t !== "");
  return {
    service: renderString(".Service", s.service, query, ctx),
    failover: { nearestN: s.failover.nearestN, datacenters: list(".Failover.Datacenters", s.failover.datacenters) },
    ignoreCheckIds: list(".IgnoreCheckIDs", s.ignoreCheckIds),
    onlyPassing: s.onlyPassing,
    near: renderString(".Near", s.near, query, ctx),
    tags,
    nodeMeta: renderMap(".NodeMeta", s.nodeMeta, query, ctx),
    serviceMeta: renderMap(".ServiceMeta", s.serviceMeta, query, ctx),
    connect: s.connect,
  };
}

export function isTemplate(query: Pick<PreparedQuery, "template">): boolean {
  return query.template.type !== "";
}

/** Groups of the template's Regexp over name, Go FindStringSubmatch style (unmatched groups are ""). */
export function templateMatches(query: PreparedQuery, name: string): string[] {
  if (query.template.regexp === "") return [];
  const m = goRegexp(query.template.regexp).exec(name);
  return m ? [...m].map((g) => g ?? "") : [];
}

/**
 * Check a template (Consul Compile): its type, its Regexp and every string in
 * Service, by rendering it for its own name. Throws Error with Consul's words.
 */
export function compileTemplate(query: PreparedQuery): void {
  if (query.template.type !== queryTemplateTypeNamePrefixMatch) throw new Error(`Bad Template.Type '${query.template.type}'`);
  if (query.template.regexp !== "") {
    try {
      goRegexp(query.template.regexp);
    } catch (err) {
      throw new Error(`Bad Regexp: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  renderTemplate(query, query.name);
}

/** The query as it runs for `name`: Service rendered, everything else as stored. */
export function renderTemplate(query: PreparedQuery, name: string): PreparedQuery {
  const service = renderService(query, { name, matches: templateMatches(query, name) });
  return Object.freeze({ ...query, service });
}
