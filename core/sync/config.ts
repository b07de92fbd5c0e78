// `cairn sync` configuration: Consul-Terraform-Sync's file format (HCL or
// JSON; CTS config/config.go, task.go, condition_*.go, module_input_*.go,
// driver.go, buffer_period.go) into a checked SyncConfig. Every key is
// known: an unknown key or a value of the wrong kind is a ConfigError that
// names the file and the line. Pure: the caller reads files and env.
import { ConfigError } from "../errors.ts";
import { parseDuration } from "../config/duration.ts";
import { HclSyntaxError, parseHcl } from "../hcl/mod.ts";
import type { ParsedDocument } from "../hcl/mod.ts";
import { parseCron } from "./cron.ts";
import type { CronSchedule } from "./cron.ts";

export interface BufferPeriod {
  enabled: boolean;
  minMs: number;
  maxMs: number;
}

export interface ConsulTls {
  enabled: boolean;
  caCert: string;
  caPath: string;
  cert: string;
  key: string;
  serverName: string;
  verify: boolean;
}

export interface ConsulConfig {
  address: string;
  token: string;
  kvPath: string;
  tls: ConsulTls;
}

export type DriverKind = "terraform" | "exec";

export interface TerraformDriverConfig {
  path: string;
  log: boolean;
  persistLog: boolean;
  /** `backend "consul" { … }` and friends: backend type → its arguments. */
  backend: Record<string, Record<string, unknown>>;
  requiredProviders: Record<string, Record<string, unknown>>;
}

export interface ExecDriverConfig {
  /** Extra environment given to every run. */
  env: Record<string, string>;
  timeoutMs: number;
}

export type Condition =
  | { kind: "services"; names: string[]; regexp?: string; datacenter: string; namespace: string; filter: string; ctsUserDefinedMeta: Record<string, string>; useAsModuleInput: boolean }
  | { kind: "catalog-services"; regexp: string; datacenter: string; namespace: string; nodeMeta: Record<string, string>; useAsModuleInput: boolean }
  | { kind: "consul-kv"; path: string; recurse: boolean; datacenter: string; namespace: string; useAsModuleInput: boolean }
  | { kind: "schedule"; cron: string; schedule: CronSchedule };

export type ModuleInput =
  | { kind: "services"; names: string[]; regexp?: string; datacenter: string; namespace: string; filter: string; ctsUserDefinedMeta: Record<string, string> }
  | { kind: "consul-kv"; path: string; recurse: boolean; datacenter: string; namespace: string };

export interface TaskConfig {
  name: string;
  description: string;
  enabled: boolean;
  module: string;
  version: string;
  variableFiles: string[];
  /** Variables read from variable_files (filled in by the loader). */
  variables: Record<string, unknown>;
  providers: string[];
  bufferPeriod: BufferPeriod;
  condition?: Condition;
  moduleInputs: ModuleInput[];
  terraformVersion: string;
  /** Where this task was written, for messages. */
  source: string;
}

export interface HighAvailabilityConfig {
  clusterName: string;
  leaderTtlMs: number;
  /** This instance's API address, for followers' redirects ("" = derived from the listener). */
  instanceAddress: string;
}

export interface SyncConfig {
  id: string;
  logLevel: string;
  port: number;
  workingDir: string;
  bufferPeriod: BufferPeriod;
  maxConcurrentRuns: number;
  runHistory: number;
  webhook: string;
  consul: ConsulConfig;
  driver: { kind: DriverKind; terraform: TerraformDriverConfig; exec: ExecDriverConfig };
  terraformProviders: Record<string, Record<string, unknown>>;
  tasks: TaskConfig[];
  highAvailability?: HighAvailabilityConfig;
}

export const defaultBufferPeriod: BufferPeriod = { enabled: true, minMs: 5_000, maxMs: 20_000 };

/** One file's text, as the loader read it. */
export interface ConfigSource {
  file: string;
  text: string;
}

type Obj = Record<string, unknown>;

/** Where values came from, for errors: the file and its positions. */
class Ctx {
  constructor(
    readonly file: string,
    readonly doc: ParsedDocument,
  ) {}

  fail(message: string, container: object | undefined, key: string | number | undefined, field: string): never {
    const pos = container !== undefined && key !== undefined ? this.doc.position(container, key) : undefined;
    const where = pos ? `${this.file}:${pos.line}` : this.file;
    throw new ConfigError(`${where}: ${message}`, { file: this.file, field, line: pos?.line });
  }
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A block written once is an object, written twice a list of objects: always a list here. */
function blocks(ctx: Ctx, parent: Obj, key: string, field: string): Obj[] {
  const v = parent[key];
  if (v === undefined) return [];
  if (isObj(v)) return [v];
  if (Array.isArray(v) && v.every(isObj)) return v as Obj[];
  return ctx.fail(`"${field}" must be a block`, parent, key, field);
}

/** At most one block. */
function block(ctx: Ctx, parent: Obj, key: string, field: string): Obj | undefined {
  const all = blocks(ctx, parent, key, field);
  if (all.length > 1) ctx.fail(`"${field}" may be given only once`, parent, key, field);
  return all[0];
}

/** `driver "terraform" { … }` → [["terraform", {…}]]: labelled blocks. */
function labelled(ctx: Ctx, parent: Obj, key: string, field: string): [string, Obj, Obj][] {
  const out: [string, Obj, Obj][] = [];
  for (const b of blocks(ctx, parent, key, field)) {
    for (const [label, body] of Object.entries(b)) {
      if (isObj(body)) out.push([label, body, b]);
      else if (Array.isArray(body) && body.every(isObj)) for (const x of body as Obj[]) out.push([label, x, b]);
      else ctx.fail(`"${field}" needs a label: ${field} "<name>" { … }`, b, label, field);
    }
  }
  return out;
}

/** HCL or JSON text → its document; a syntax error is a ConfigError naming file:line. */
function parseSource(src: ConfigSource): ParsedDocument<Record<string, unknown>> {
  try {
    return parseHcl(src.text, { file: src.file });
  } catch (err) {
    if (err instanceof HclSyntaxError) throw new ConfigError(`${src.file}:${err.line}: ${err.reason}`, { file: src.file, line: err.line });
    throw err;
  }
}

function checkKeys(ctx: Ctx, o: Obj, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) ctx.fail(`Unknown key "${k}" in ${where} (known: ${allowed.join(", ")})`, o, k, `${where}.${k}`);
  }
}

function str(ctx: Ctx, o: Obj, k: string, field: string, dflt = ""): string {
  const v = o[k];
  if (v === undefined) return dflt;
  if (typeof v !== "string") ctx.fail(`"${field}" must be a string, got ${JSON.stringify(v)}`, o, k, field);
  return v;
}

function bool(ctx: Ctx, o: Obj, k: string, field: string, dflt: boolean): boolean {
  const v = o[k];
  if (v === undefined) return dflt;
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  return ctx.fail(`"${field}" must be true or false, got ${JSON.stringify(v)}`, o, k, field);
}

function int(ctx: Ctx, o: Obj, k: string, field: string, dflt: number, range: [number, number]): number {
  const v = o[k];
  if (v === undefined) return dflt;
  const n = typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < range[0] || n > range[1]) {
    ctx.fail(`"${field}" must be an integer from ${range[0]} to ${range[1]}, got ${JSON.stringify(v)}`, o, k, field);
  }
  return n;
}

function duration(ctx: Ctx, o: Obj, k: string, field: string, dflt: number): number {
  const v = o[k];
  if (v === undefined) return dflt;
  const ms = typeof v === "string" ? parseDuration(v) : typeof v === "number" && v >= 0 ? v / 1e6 : undefined; // a bare number is Go nanoseconds
  if (ms === undefined || ms < 0) ctx.fail(`"${field}" must be a duration such as "5s", got ${JSON.stringify(v)}`, o, k, field);
  return ms;
}

function strList(ctx: Ctx, o: Obj, k: string, field: string): string[] {
  const v = o[k];
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) ctx.fail(`"${field}" must be a list of strings`, o, k, field);
  return v as string[];
}

function strMap(ctx: Ctx, o: Obj, k: string, field: string): Record<string, string> {
  const v = o[k];
  if (v === undefined) return {};
  const m = Array.isArray(v) && v.length === 1 ? v[0] : v;
  if (!isObj(m) || !Object.values(m).every((x) => typeof x === "string")) ctx.fail(`"${field}" must be a map of strings`, o, k, field);
  return { ...(m as Record<string, string>) };
}

function bufferPeriod(ctx: Ctx, parent: Obj, field: string, inherit: BufferPeriod): BufferPeriod {
  const b = block(ctx, parent, "buffer_period", field);
  if (!b) return { ...inherit };
  checkKeys(ctx, b, ["enabled", "min", "max"], field);
  const enabled = bool(ctx, b, "enabled", `${field}.enabled`, b.min !== undefined || b.max !== undefined ? true : inherit.enabled);
  const minMs = duration(ctx, b, "min", `${field}.min`, inherit.minMs);
  // CTS: max defaults to 4 × min when only min is given.
  const maxMs = duration(ctx, b, "max", `${field}.max`, b.min !== undefined ? minMs * 4 : inherit.maxMs);
  if (enabled && maxMs < minMs) ctx.fail(`"${field}.max" (${maxMs} ms) must not be below "${field}.min" (${minMs} ms)`, b, "max", `${field}.max`);
  return { enabled, minMs, maxMs };
}

function checkRegexp(ctx: Ctx, o: Obj, k: string, field: string): string | undefined {
  if (o[k] === undefined) return undefined;
  const re = str(ctx, o, k, field);
  try {
    new RegExp(re);
  } catch (err) {
    ctx.fail(`"${field}" is not a valid regular expression: ${(err as Error).message}`, o, k, field);
  }
  return re;
}

const serviceKeys = ["names", "regexp", "datacenter", "namespace", "filter", "cts_user_defined_meta"];

function servicesSelector(ctx: Ctx, b: Obj, field: string) {
  const names = strList(ctx, b, "names", `${field}.names`);
  const regexp = checkRegexp(ctx, b, "regexp", `${field}.regexp`);
  if (names.length > 0 && regexp !== undefined) ctx.fail(`${field}: give "names" or "regexp", not both`, b, "regexp", `${field}.regexp`);
  if (names.length === 0 && regexp === undefined) ctx.fail(`${field}: one of "names" or "regexp" is required`, undefined, undefined, field);
  return {
    names,
    ...(regexp !== undefined ? { regexp } : {}),
    datacenter: str(ctx, b, "datacenter", `${field}.datacenter`),
    namespace: str(ctx, b, "namespace", `${field}.namespace`),
    filter: str(ctx, b, "filter", `${field}.filter`),
    ctsUserDefinedMeta: strMap(ctx, b, "cts_user_defined_meta", `${field}.cts_user_defined_meta`),
  };
}

function kvSelector(ctx: Ctx, b: Obj, field: string) {
  const path = str(ctx, b, "path", `${field}.path`);
  if (path === "") ctx.fail(`${field}: "path" is required`, undefined, undefined, `${field}.path`);
  return {
    path,
    recurse: bool(ctx, b, "recurse", `${field}.recurse`, false),
    datacenter: str(ctx, b, "datacenter", `${field}.datacenter`),
    namespace: str(ctx, b, "namespace", `${field}.namespace`),
  };
}

function condition(ctx: Ctx, task: Obj, field: string): Condition | undefined {
  const all = labelled(ctx, task, "condition", `${field}.condition`);
  if (all.length > 1) ctx.fail(`${field}: only one condition block is allowed`, task, "condition", `${field}.condition`);
  const one = all[0];
  if (!one) return undefined;
  const [kind, b, holder] = one;
  const f = `${field}.condition "${kind}"`;
  switch (kind) {
    case "services":
      checkKeys(ctx, b, [...serviceKeys, "use_as_module_input"], f);
      return { kind, ...servicesSelector(ctx, b, f), useAsModuleInput: bool(ctx, b, "use_as_module_input", `${f}.use_as_module_input`, true) };
    case "catalog-services": {
      checkKeys(ctx, b, ["regexp", "datacenter", "namespace", "node_meta", "use_as_module_input"], f);
      const regexp = checkRegexp(ctx, b, "regexp", `${f}.regexp`);
      if (regexp === undefined) ctx.fail(`${f}: "regexp" is required`, undefined, undefined, `${f}.regexp`);
      return {
        kind,
        regexp,
        datacenter: str(ctx, b, "datacenter", `${f}.datacenter`),
        namespace: str(ctx, b, "namespace", `${f}.namespace`),
        nodeMeta: strMap(ctx, b, "node_meta", `${f}.node_meta`),
        useAsModuleInput: bool(ctx, b, "use_as_module_input", `${f}.use_as_module_input`, true),
      };
    }
    case "consul-kv":
      checkKeys(ctx, b, ["path", "recurse", "datacenter", "namespace", "use_as_module_input"], f);
      return { kind, ...kvSelector(ctx, b, f), useAsModuleInput: bool(ctx, b, "use_as_module_input", `${f}.use_as_module_input`, true) };
    case "schedule": {
      checkKeys(ctx, b, ["cron"], f);
      const cron = str(ctx, b, "cron", `${f}.cron`);
      const parsed = parseCron(cron);
      if (typeof parsed === "string") ctx.fail(`"${f}.cron": ${parsed}`, b, "cron", `${f}.cron`);
      return { kind, cron, schedule: parsed };
    }
    default:
      return ctx.fail(`Unknown condition type "${kind}" (known: services, catalog-services, consul-kv, schedule)`, holder, kind, `${field}.condition`);
  }
}

function moduleInputs(ctx: Ctx, task: Obj, field: string): ModuleInput[] {
  const out: ModuleInput[] = [];
  for (const key of ["module_input", "source_input"]) {
    for (const [kind, b, holder] of labelled(ctx, task, key, `${field}.${key}`)) {
      const f = `${field}.${key} "${kind}"`;
      if (kind === "services") {
        checkKeys(ctx, b, serviceKeys, f);
        out.push({ kind, ...servicesSelector(ctx, b, f) });
      } else if (kind === "consul-kv") {
        checkKeys(ctx, b, ["path", "recurse", "datacenter", "namespace"], f);
        out.push({ kind, ...kvSelector(ctx, b, f) });
      } else {
        ctx.fail(`Unknown module_input type "${kind}" (known: services, consul-kv)`, holder, kind, `${field}.${key}`);
      }
    }
  }
  return out;
}

const taskKeys = [
  "name", "description", "enabled", "module", "source", "version", "variable_files", "providers", "buffer_period",
  "condition", "module_input", "source_input", "terraform_version", "services",
];

function task(ctx: Ctx, t: Obj, index: number, global: BufferPeriod): TaskConfig {
  const name = str(ctx, t, "name", `task[${index}].name`);
  const field = name ? `task "${name}"` : `task[${index}]`;
  checkKeys(ctx, t, taskKeys, field);
  if (!/^[a-zA-Z][a-zA-Z0-9_-]*$/.test(name)) {
    ctx.fail(`${field}: "name" is required and must start with a letter and hold only letters, digits, "_" and "-"`, t, "name", `${field}.name`);
  }
  const module = str(ctx, t, "module", `${field}.module`) || str(ctx, t, "source", `${field}.source`);
  if (module === "") ctx.fail(`${field}: "module" is required`, undefined, undefined, `${field}.module`);
  const inputs = moduleInputs(ctx, t, field);
  // CTS 0.x: `services = ["web"]` on the task is a services module input.
  const legacy = strList(ctx, t, "services", `${field}.services`);
  if (legacy.length > 0) inputs.push({ kind: "services", names: legacy, datacenter: "", namespace: "", filter: "", ctsUserDefinedMeta: {} });
  const cond = condition(ctx, t, field);
  if (!cond && inputs.length === 0) {
    ctx.fail(`${field}: needs a condition block or a module_input (nothing would ever trigger it)`, undefined, undefined, field);
  }
  const kinds = inputs.map((i) => i.kind);
  if (cond && cond.kind !== "schedule" && (cond.kind === "catalog-services" ? false : cond.useAsModuleInput) && kinds.includes(cond.kind as "services" | "consul-kv")) {
    ctx.fail(`${field}: module_input "${cond.kind}" repeats the condition's own input (set use_as_module_input = false on the condition)`, t, "module_input", field);
  }
  if (new Set(kinds).size !== kinds.length) ctx.fail(`${field}: at most one module_input of each type`, t, "module_input", field);
  const pos = ctx.doc.position(t, "name");
  return {
    name,
    description: str(ctx, t, "description", `${field}.description`),
    enabled: bool(ctx, t, "enabled", `${field}.enabled`, true),
    module,
    version: str(ctx, t, "version", `${field}.version`),
    variableFiles: strList(ctx, t, "variable_files", `${field}.variable_files`),
    variables: {},
    providers: strList(ctx, t, "providers", `${field}.providers`),
    bufferPeriod: cond?.kind === "schedule" ? { enabled: false, minMs: 0, maxMs: 0 } : bufferPeriod(ctx, t, `${field}.buffer_period`, global),
    ...(cond ? { condition: cond } : {}),
    moduleInputs: inputs,
    terraformVersion: str(ctx, t, "terraform_version", `${field}.terraform_version`),
    source: pos ? `${ctx.file}:${pos.line}` : ctx.file,
  };
}

function nested(ctx: Ctx, v: unknown, field: string, o: Obj, k: string): Obj {
  const m = Array.isArray(v) && v.length === 1 ? v[0] : v;
  if (!isObj(m)) ctx.fail(`"${field}" must be a block`, o, k, field);
  return m;
}

const topKeys = [
  "id", "log_level", "port", "working_dir", "buffer_period", "consul", "driver", "terraform_provider", "task",
  "max_concurrent_runs", "run_history", "webhook", "high_availability", "syslog", "tls",
];

/** Environment used for `consul {}` defaults (CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, …). */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Parse and check one or more files (later files add tasks and override
 * plain settings, as CTS merges a config directory). Throws ConfigError.
 */
export function parseSyncConfig(sources: readonly ConfigSource[], env: Env = {}): SyncConfig {
  const cfg: SyncConfig = {
    id: "consul-terraform-sync",
    logLevel: "info",
    port: 8558,
    workingDir: "sync-tasks",
    bufferPeriod: { ...defaultBufferPeriod },
    maxConcurrentRuns: 4,
    runHistory: 10,
    webhook: "",
    consul: {
      address: env.CONSUL_HTTP_ADDR || "localhost:8500",
      token: env.CONSUL_HTTP_TOKEN || "",
      kvPath: "consul-terraform-sync/",
      tls: {
        enabled: env.CONSUL_HTTP_SSL === "true",
        caCert: env.CONSUL_CACERT || "",
        caPath: env.CONSUL_CAPATH || "",
        cert: env.CONSUL_CLIENT_CERT || "",
        key: env.CONSUL_CLIENT_KEY || "",
        serverName: env.CONSUL_TLS_SERVER_NAME || "",
        verify: env.CONSUL_HTTP_SSL_VERIFY !== "false",
      },
    },
    driver: {
      kind: "terraform",
      terraform: { path: "", log: false, persistLog: false, backend: {}, requiredProviders: {} },
      exec: { env: {}, timeoutMs: 0 },
    },
    terraformProviders: {},
    tasks: [],
  };
  const pendingTasks: { ctx: Ctx; t: Obj; i: number }[] = [];
  let driverSeen = false;
  for (const src of sources) {
    const doc = parseSource(src);
    const ctx = new Ctx(src.file, doc);
    const o = doc.value;
    checkKeys(ctx, o, topKeys, "the top level");
    if (o.id !== undefined) cfg.id = str(ctx, o, "id", "id");
    if (o.log_level !== undefined) {
      const lvl = str(ctx, o, "log_level", "log_level").toLowerCase();
      if (!["trace", "debug", "info", "warn", "error"].includes(lvl)) ctx.fail(`"log_level" must be one of trace, debug, info, warn, error, got "${lvl}"`, o, "log_level", "log_level");
      cfg.logLevel = lvl;
    }
    cfg.port = int(ctx, o, "port", "port", cfg.port, [0, 65535]);
    cfg.workingDir = str(ctx, o, "working_dir", "working_dir", cfg.workingDir);
    cfg.maxConcurrentRuns = int(ctx, o, "max_concurrent_runs", "max_concurrent_runs", cfg.maxConcurrentRuns, [1, 1024]);
    cfg.runHistory = int(ctx, o, "run_history", "run_history", cfg.runHistory, [1, 10_000]);
    cfg.webhook = str(ctx, o, "webhook", "webhook", cfg.webhook);
    if (cfg.webhook !== "" && !/^https?:\/\//.test(cfg.webhook)) ctx.fail(`"webhook" must be an http:// or https:// URL`, o, "webhook", "webhook");
    cfg.bufferPeriod = bufferPeriod(ctx, o, "buffer_period", cfg.bufferPeriod);
    for (const k of ["syslog", "tls"]) {
      if (o[k] !== undefined) ctx.fail(`"${k}" is not supported by cairn sync yet`, o, k, k);
    }
    const consul = block(ctx, o, "consul", "consul");
    if (consul) {
      checkKeys(ctx, consul, ["address", "token", "kv_path", "tls"], "consul");
      cfg.consul.address = str(ctx, consul, "address", "consul.address", cfg.consul.address);
      cfg.consul.token = str(ctx, consul, "token", "consul.token", cfg.consul.token);
      cfg.consul.kvPath = str(ctx, consul, "kv_path", "consul.kv_path", cfg.consul.kvPath);
      const tls = block(ctx, consul, "tls", "consul.tls");
      if (tls) {
        checkKeys(ctx, tls, ["enabled", "ca_cert", "ca_path", "cert", "key", "server_name", "verify"], "consul.tls");
        const t = cfg.consul.tls;
        t.enabled = bool(ctx, tls, "enabled", "consul.tls.enabled", t.enabled);
        t.caCert = str(ctx, tls, "ca_cert", "consul.tls.ca_cert", t.caCert);
        t.caPath = str(ctx, tls, "ca_path", "consul.tls.ca_path", t.caPath);
        t.cert = str(ctx, tls, "cert", "consul.tls.cert", t.cert);
        t.key = str(ctx, tls, "key", "consul.tls.key", t.key);
        t.serverName = str(ctx, tls, "server_name", "consul.tls.server_name", t.serverName);
        t.verify = bool(ctx, tls, "verify", "consul.tls.verify", t.verify);
        if ((t.cert === "") !== (t.key === "")) ctx.fail(`"consul.tls": "cert" and "key" must be given together`, consul, "tls", "consul.tls");
      }
    }
    for (const [kind, b, holder] of labelled(ctx, o, "driver", "driver")) {
      if (driverSeen) ctx.fail(`Only one driver block is allowed`, holder, kind, "driver");
      driverSeen = true;
      if (kind === "terraform") {
        checkKeys(ctx, b, ["path", "log", "persist_log", "backend", "required_providers", "working_dir", "version"], 'driver "terraform"');
        if (b.working_dir !== undefined) ctx.fail(`"driver.terraform.working_dir" was removed in CTS 0.5: use the top-level "working_dir"`, b, "working_dir", "driver.terraform.working_dir");
        if (b.version !== undefined) ctx.fail(`"driver.terraform.version" would download Terraform; cairn never downloads: install terraform or tofu and set "path"`, b, "version", "driver.terraform.version");
        const tf = cfg.driver.terraform;
        tf.path = str(ctx, b, "path", "driver.terraform.path");
        tf.log = bool(ctx, b, "log", "driver.terraform.log", false);
        tf.persistLog = bool(ctx, b, "persist_log", "driver.terraform.persist_log", false);
        if (b.backend !== undefined) {
          const be = nested(ctx, b.backend, "driver.terraform.backend", b, "backend");
          for (const [name, args] of Object.entries(be)) tf.backend[name] = nested(ctx, args, `driver.terraform.backend.${name}`, be, name);
          if (Object.keys(tf.backend).length > 1) ctx.fail(`"driver.terraform.backend" takes one backend`, b, "backend", "driver.terraform.backend");
        }
        if (b.required_providers !== undefined) {
          const rp = nested(ctx, b.required_providers, "driver.terraform.required_providers", b, "required_providers");
          for (const [name, args] of Object.entries(rp)) tf.requiredProviders[name] = nested(ctx, args, `driver.terraform.required_providers.${name}`, rp, name);
        }
        cfg.driver.kind = "terraform";
      } else if (kind === "exec") {
        checkKeys(ctx, b, ["env", "timeout"], 'driver "exec"');
        cfg.driver.exec = { env: strMap(ctx, b, "env", "driver.exec.env"), timeoutMs: duration(ctx, b, "timeout", "driver.exec.timeout", 0) };
        cfg.driver.kind = "exec";
      } else {
        ctx.fail(`Unknown driver "${kind}" (known: terraform, exec)`, holder, kind, "driver");
      }
    }
    for (const [name, b] of labelled(ctx, o, "terraform_provider", "terraform_provider")) cfg.terraformProviders[name] = b;
    const ha = block(ctx, o, "high_availability", "high_availability");
    if (ha) {
      checkKeys(ctx, ha, ["cluster", "instance"], "high_availability");
      const inst = block(ctx, ha, "instance", "high_availability.instance") ?? {};
      checkKeys(ctx, inst, ["address"], "high_availability.instance");
      const cl = block(ctx, ha, "cluster", "high_availability.cluster") ?? {};
      checkKeys(ctx, cl, ["name", "leader_election"], "high_availability.cluster");
      const le = block(ctx, cl, "leader_election", "high_availability.cluster.leader_election") ?? {};
      checkKeys(ctx, le, ["ttl"], "high_availability.cluster.leader_election");
      const clusterName = str(ctx, cl, "name", "high_availability.cluster.name");
      if (clusterName === "") ctx.fail(`"high_availability.cluster.name" is required`, ha, "cluster", "high_availability.cluster.name");
      const leaderTtlMs = duration(ctx, le, "ttl", "high_availability.cluster.leader_election.ttl", 15_000);
      if (leaderTtlMs < 10_000) ctx.fail(`"high_availability.cluster.leader_election.ttl" must be at least 10s (the servers' minimum session TTL)`, le, "ttl", "high_availability.cluster.leader_election.ttl");
      cfg.highAvailability = { clusterName, leaderTtlMs, instanceAddress: str(ctx, inst, "address", "high_availability.instance.address") };
    }
    blocks(ctx, o, "task", "task").forEach((t, i) => pendingTasks.push({ ctx, t, i }));
  }
  const seen = new Map<string, string>();
  for (const { ctx, t, i } of pendingTasks) {
    const tc = task(ctx, t, i, cfg.bufferPeriod);
    const prev = seen.get(tc.name);
    if (prev) ctx.fail(`task "${tc.name}" is defined twice (first at ${prev})`, t, "name", `task.${tc.name}`);
    seen.set(tc.name, tc.source);
    for (const p of tc.providers) {
      const base = p.split(".")[0]!;
      if (!(base in cfg.terraformProviders) && !(base in cfg.driver.terraform.requiredProviders) && cfg.driver.kind === "terraform") {
        ctx.fail(`task "${tc.name}": provider "${p}" has no terraform_provider block`, t, "providers", `task.${tc.name}.providers`);
      }
    }
    cfg.tasks.push(tc);
  }
  return cfg;
}

/**
 * A task given alone (the API's `POST /v1/tasks` body, `cairn sync task
 * create`), checked against the running configuration's defaults.
 */
export function parseTaskDocument(source: ConfigSource, cfg: Pick<SyncConfig, "bufferPeriod">): TaskConfig {
  const doc = parseSource(source);
  const ctx = new Ctx(source.file, doc);
  const o = doc.value;
  const t = o.task !== undefined ? blocks(ctx, o, "task", "task") : [o];
  if (t.length !== 1) ctx.fail("Expected exactly one task", o, "task", "task");
  return task(ctx, t[0]!, 0, cfg.bufferPeriod);
}
