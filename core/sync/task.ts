// The task model: a configured task → the dependencies it watches (one
// blocking query each, shared by every task naming the same one) and the
// render of its module inputs from their data. Pure.
import type { TaskConfig } from "./config.ts";
import type { RenderedInputs, RenderedService } from "./render.ts";
import type { TaskSpec } from "./scheduler.ts";

/** One blocking query against the agent. The key is its identity. */
export interface Dependency {
  key: string;
  kind: "health" | "health-regexp" | "kv" | "catalog-services";
  /** HTTP path under the agent, and query parameters (besides index/wait). */
  path: string;
  params: [string, string][];
}

function dep(kind: Dependency["kind"], path: string, params: Record<string, string>, extra: [string, string][] = []): Dependency {
  const clean: [string, string][] = [];
  for (const k of Object.keys(params).sort()) if (params[k] !== "") clean.push([k, params[k]!]);
  clean.push(...[...extra].sort());
  const qs = new URLSearchParams(clean).toString();
  return { key: `${kind} ${path}${qs ? `?${qs}` : ""}`, kind, path, params: clean };
}

function healthDep(name: string, dc: string, ns: string, filter: string): Dependency {
  // consul-template's service(): healthy instances only.
  return dep("health", `/v1/health/service/${encodeURIComponent(name)}`, { dc, ns, filter, passing: "1" });
}

function kvDep(path: string, recurse: boolean, dc: string, ns: string): Dependency {
  const clean = path.replace(/^\/+/, "");
  return dep("kv", `/v1/kv/${clean.split("/").map(encodeURIComponent).join("/")}`, { dc, ns, ...(recurse ? { recurse: "1" } : {}) });
}

interface Part {
  dep: Dependency;
  apply(out: RenderedInputs, value: unknown): void;
}

function serviceParts(names: string[], dc: string, ns: string, filter: string, userMeta: Record<string, string>, regexp?: string): Part[] {
  const deps = regexp !== undefined ? [dep("health-regexp", "/v1/catalog/services", { dc, ns, filter, regexp })] : names.map((n) => healthDep(n, dc, ns, filter));
  return deps.map((d) => ({
    dep: d,
    apply(out, value) {
      const services = (out.services ??= {});
      for (const [k, v] of Object.entries(value as Record<string, RenderedService>)) {
        services[k] = Object.keys(userMeta).length > 0 ? { ...v, cts_user_defined_meta: { ...userMeta } } : v;
      }
    },
  }));
}

function kvPart(path: string, recurse: boolean, dc: string, ns: string): Part {
  return {
    dep: kvDep(path, recurse, dc, ns),
    apply(out, value) {
      out.consul_kv = { ...(out.consul_kv ?? {}), ...(value as Record<string, string>) };
    },
  };
}

/** A condition that is not a module input: its data enters the hash (under "#<key>") but never the variables. */
function hashOnly(d: Dependency): Part {
  return { dep: d, apply: (o, value) => { (o as Record<string, unknown>)[`#${d.key}`] = value; } };
}

/** The parts of a task: each watched dependency and what it contributes to the inputs. */
function parts(t: TaskConfig): Part[] {
  const out: Part[] = [];
  const c = t.condition;
  if (c?.kind === "services") {
    const p = serviceParts(c.names, c.datacenter, c.namespace, c.filter, c.ctsUserDefinedMeta, c.regexp);
    // A condition that is not a module input still triggers: it adds a hash-only part.
    out.push(...(c.useAsModuleInput ? p : p.map((x) => hashOnly(x.dep))));
  } else if (c?.kind === "consul-kv") {
    const p = kvPart(c.path, c.recurse, c.datacenter, c.namespace);
    out.push(c.useAsModuleInput ? p : hashOnly(p.dep));
  } else if (c?.kind === "catalog-services") {
    const re = new RegExp(c.regexp);
    const params: Record<string, string> = { dc: c.datacenter, ns: c.namespace };
    const d = dep("catalog-services", "/v1/catalog/services", params, Object.entries(c.nodeMeta).map(([k, v]) => ["node-meta", `${k}:${v}`]));
    out.push({
      dep: d,
      apply(o, value) {
        const m: Record<string, string[]> = {};
        for (const [name, tags] of Object.entries(value as Record<string, string[]>).sort(([a], [b]) => (a < b ? -1 : 1))) {
          if (re.test(name)) m[name] = [...tags].sort();
        }
        if (c.useAsModuleInput) o.catalog_services = m;
        else (o as Record<string, unknown>)[`#${d.key}`] = m;
      },
    });
  }
  for (const mi of t.moduleInputs) {
    if (mi.kind === "services") out.push(...serviceParts(mi.names, mi.datacenter, mi.namespace, mi.filter, mi.ctsUserDefinedMeta, mi.regexp));
    else out.push(kvPart(mi.path, mi.recurse, mi.datacenter, mi.namespace));
  }
  return out;
}

/** Every dependency of a task, deduplicated. */
export function taskDependencies(t: TaskConfig): Dependency[] {
  const m = new Map<string, Dependency>();
  for (const p of parts(t)) m.set(p.dep.key, p.dep);
  return [...m.values()];
}

/** Inputs to give the module: the render without hash-only parts. */
export function moduleVariables(inputs: RenderedInputs): RenderedInputs {
  const out: RenderedInputs = {};
  if (inputs.services !== undefined) out.services = inputs.services;
  if (inputs.consul_kv !== undefined) out.consul_kv = inputs.consul_kv;
  if (inputs.catalog_services !== undefined) out.catalog_services = inputs.catalog_services;
  return out;
}

/** The scheduler's view of a task. */
export function taskSpec(t: TaskConfig, appliedHash?: string): TaskSpec<RenderedInputs> {
  const ps = parts(t);
  const needsServices = ps.some((p) => p.dep.kind === "health" || p.dep.kind === "health-regexp");
  return {
    name: t.name,
    enabled: t.enabled,
    deps: [...new Set(ps.map((p) => p.dep.key))],
    bufferPeriod: t.bufferPeriod,
    ...(t.condition?.kind === "schedule" ? { schedule: t.condition.schedule } : {}),
    ...(appliedHash !== undefined ? { appliedHash } : {}),
    render(data) {
      const out: RenderedInputs = needsServices ? { services: {} } : {};
      for (const p of ps) p.apply(out, data.get(p.dep.key));
      if (out.services) {
        const sorted: Record<string, RenderedService> = {};
        for (const k of Object.keys(out.services).sort()) sorted[k] = out.services[k]!;
        out.services = sorted;
      }
      return out;
    },
  };
}
