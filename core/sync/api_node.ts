// The sync API on port 8558, in CTS's shapes (api/oapigen, docs "nia/api"):
//   GET    /v1/health                         {}
//   GET    /v1/status                         task_summary counts
//   GET    /v1/status/tasks[/:name]           ?include=events, ?status=
//   POST   /v1/tasks[?run=now|inspect]        { task: {…} } → 201 { request_id, task }
//   GET    /v1/tasks/:name                    { request_id, task }
//   PATCH  /v1/tasks/:name[?run=now|inspect]  { enabled } → {} or { inspect }
//   PUT    /v1/tasks/:name                    { task: {…} }: replace the whole task
//   DELETE /v1/tasks/:name[?destroy=true]     202 { request_id }
// Errors are { error: { message } }, as CTS's. A follower (HA) answers every
// call but /v1/health with a redirect to the leader.
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { ConfigError, errorMessage } from "../errors.ts";
import { formatDuration } from "../config/duration.ts";
import { parseTaskDocument } from "./config.ts";
import type { TaskConfig } from "./config.ts";
import type { RunRecord, SyncRuntime } from "./runtime_node.ts";

export interface ApiAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface SyncApiOptions {
  /** HA: the leader's API address when this instance is not the leader, "" when unknown. */
  leaderAddress?: () => string | undefined;
}

/** CTS's task JSON. */
function taskJson(t: TaskConfig): Record<string, unknown> {
  const c = t.condition;
  let condition: Record<string, unknown> = {};
  if (c?.kind === "services") {
    condition = { services: { names: c.names, ...(c.regexp !== undefined ? { regexp: c.regexp } : {}), datacenter: c.datacenter, namespace: c.namespace, filter: c.filter, cts_user_defined_meta: c.ctsUserDefinedMeta, use_as_module_input: c.useAsModuleInput } };
  } else if (c?.kind === "catalog-services") {
    condition = { "catalog-services": { regexp: c.regexp, datacenter: c.datacenter, namespace: c.namespace, node_meta: c.nodeMeta, use_as_module_input: c.useAsModuleInput } };
  } else if (c?.kind === "consul-kv") {
    condition = { "consul-kv": { path: c.path, recurse: c.recurse, datacenter: c.datacenter, namespace: c.namespace, use_as_module_input: c.useAsModuleInput } };
  } else if (c?.kind === "schedule") {
    condition = { schedule: { cron: c.cron } };
  }
  const moduleInput: Record<string, unknown> = {};
  for (const m of t.moduleInputs) {
    moduleInput[m.kind] = m.kind === "services"
      ? { names: m.names, datacenter: m.datacenter, namespace: m.namespace, filter: m.filter, cts_user_defined_meta: m.ctsUserDefinedMeta }
      : { path: m.path, recurse: m.recurse, datacenter: m.datacenter, namespace: m.namespace };
  }
  return {
    name: t.name,
    description: t.description,
    enabled: t.enabled,
    module: t.module,
    version: t.version,
    variable_files: t.variableFiles,
    providers: t.providers,
    buffer_period: { enabled: t.bufferPeriod.enabled, min: formatDuration(t.bufferPeriod.minMs), max: formatDuration(t.bufferPeriod.maxMs) },
    condition,
    module_input: moduleInput,
    terraform_version: t.terraformVersion,
  };
}

function eventJson(r: RunRecord, t: TaskConfig): Record<string, unknown> {
  return {
    id: r.id,
    task_name: r.task,
    success: r.status === "successful",
    start_time: r.startTime,
    end_time: r.endTime ?? null,
    trigger: r.trigger,
    status: r.status,
    exit_code: r.exitCode ?? null,
    changed_inputs: r.changedInputs,
    output_tail: r.outputTail ?? "",
    error: r.error !== undefined ? { message: r.error } : null,
    config: { providers: t.providers, services: serviceNames(t), source: t.module },
  };
}

function serviceNames(t: TaskConfig): string[] {
  const out: string[] = [];
  for (const s of [...(t.condition ? [t.condition] : []), ...t.moduleInputs]) if (s.kind === "services") out.push(...s.names);
  return out;
}

/** CTS's task health from its recent events (newest last). */
function taskStatus(runs: readonly RunRecord[]): "successful" | "errored" | "critical" | "unknown" {
  const done = runs.filter((r) => r.status !== "running");
  const last = done.at(-1);
  if (!last) return "unknown";
  if (last.status === "successful") return "successful";
  return done.some((r) => r.status === "successful") ? "errored" : "critical";
}

function err(status: number, message: string): ApiAnswer {
  return { status, body: { error: { message } } };
}

/** The API as a function of one request, so tests call it directly. */
export function syncApiHandler(rt: SyncRuntime, options: SyncApiOptions = {}) {
  return async function handle(method: string, rawUrl: string, body: string): Promise<ApiAnswer> {
    const url = new URL(rawUrl, "http://sync");
    const path = url.pathname.replace(/\/+$/, "");
    const q = url.searchParams;
    const requestId = randomUUID();
    if (path === "/v1/health" && method === "GET") return { status: 200, body: {} };
    const leader = options.leaderAddress?.();
    if (leader !== undefined) {
      if (leader === "") return err(503, "This instance is not the leader and no leader is known yet");
      return { status: 307, body: { error: { message: `Not the leader: the leader is at ${leader}` } }, headers: { location: `${leader.replace(/\/+$/, "")}${url.pathname}${url.search}` } };
    }
    if (path === "/v1/status" && method === "GET") {
      const counts = { successful: 0, errored: 0, critical: 0, unknown: 0 };
      const enabled = { true: 0, false: 0 };
      for (const n of rt.taskNames()) {
        counts[taskStatus(rt.runs(n))]++;
        if (rt.taskConfig(n)!.enabled) enabled.true++;
        else enabled.false++;
      }
      return { status: 200, body: { task_summary: { status: counts, enabled } } };
    }
    if ((path === "/v1/status/tasks" || path.startsWith("/v1/status/tasks/")) && method === "GET") {
      const one = path.startsWith("/v1/status/tasks/") ? decodeURIComponent(path.slice("/v1/status/tasks/".length)) : undefined;
      if (one !== undefined && !rt.taskConfig(one)) return err(404, `a task with the name '${one}' does not exist or has not been initialized yet`);
      const want = q.get("status");
      if (want !== null && !["successful", "errored", "critical", "unknown"].includes(want)) return err(400, `Invalid status "${want}": use successful, errored, critical or unknown`);
      const include = q.get("include");
      if (include !== null && include !== "events") return err(400, `Invalid include "${include}": only "events"`);
      const out: Record<string, unknown> = {};
      for (const n of one !== undefined ? [one] : rt.taskNames()) {
        const t = rt.taskConfig(n)!;
        const runs = rt.runs(n);
        const status = taskStatus(runs);
        if (want !== null && status !== want) continue;
        out[n] = {
          task_name: n,
          status,
          enabled: t.enabled,
          providers: t.providers,
          services: serviceNames(t),
          events_url: `/v1/status/tasks/${n}?include=events`,
          ...(include === "events" ? { events: [...runs].reverse().map((r) => eventJson(r, t)) } : {}),
        };
      }
      return { status: 200, body: out };
    }
    const run = q.get("run");
    if (run !== null && run !== "now" && run !== "inspect") return err(400, `Invalid run "${run}": use now or inspect`);
    if (path === "/v1/tasks" && method === "POST") {
      const parsed = parseTaskBody(body, rt);
      if ("error" in parsed) return parsed.error;
      const t = parsed.task;
      if (rt.taskConfig(t.name)) return err(400, `task with name ${t.name} already exists`);
      if (run === "inspect") {
        // CTS: the plan of the task as given, and nothing created.
        try {
          const r = await rt.inspectNew(t);
          return { status: r.ok ? 200 : 500, body: { request_id: requestId, task: taskJson(t), run: { plan: r.plan ?? r.outputTail, changes_present: r.changesPresent ?? true }, ...(r.ok ? {} : { error: { message: r.error ?? "inspect failed" } }) } };
        } catch (e) {
          return err(500, errorMessage(e));
        }
      }
      await rt.createTask(t, { definition: parsed.definition });
      if (run === "now") rt.runNow(t.name);
      return { status: 201, body: { request_id: requestId, task: taskJson(rt.taskConfig(t.name)!) } };
    }
    if (path.startsWith("/v1/tasks/")) {
      const name = decodeURIComponent(path.slice("/v1/tasks/".length));
      const t = rt.taskConfig(name);
      if (method === "PUT") {
        const parsed = parseTaskBody(body, rt);
        if ("error" in parsed) return parsed.error;
        if (parsed.task.name !== name) return err(400, `The task's name "${parsed.task.name}" is not "${name}" from the path`);
        await rt.createTask(parsed.task, { replace: true, definition: parsed.definition });
        if (run === "now") rt.runNow(name);
        return { status: 200, body: { request_id: requestId, task: taskJson(rt.taskConfig(name)!) } };
      }
      if (!t) return err(404, `a task with name '${name}' does not exist or has not been initialized yet`);
      if (method === "GET") return { status: 200, body: { request_id: requestId, task: taskJson(t) } };
      if (method === "PATCH") {
        let patch: unknown;
        try {
          patch = body.trim() === "" ? {} : JSON.parse(body);
        } catch {
          return err(400, "The body is not JSON");
        }
        const keys = typeof patch === "object" && patch !== null ? Object.keys(patch) : [];
        const bad = keys.find((k) => k !== "enabled");
        if (bad !== undefined) return err(400, `Only "enabled" can be patched, not "${bad}"`);
        const enabled = (patch as { enabled?: unknown }).enabled;
        if (enabled !== undefined && typeof enabled !== "boolean") return err(400, `"enabled" must be true or false`);
        if (run === "inspect") {
          try {
            const r = await rt.inspect(name);
            const v = rt.taskView(name);
            const changes = r.changesPresent ?? v?.hash !== v?.appliedHash;
            return { status: r.ok ? 200 : 500, body: { inspect: { changes_present: changes, plan: r.plan ?? r.outputTail }, ...(r.ok ? {} : { error: { message: r.error ?? "inspect failed" } }) } };
          } catch (e) {
            return err(500, errorMessage(e));
          }
        }
        if (enabled !== undefined) await rt.setEnabled(name, enabled);
        if (run === "now") rt.runNow(name);
        return { status: 200, body: {} };
      }
      if (method === "DELETE") {
        const destroy = q.get("destroy");
        if (destroy !== null && destroy !== "true" && destroy !== "false") return err(400, `Invalid destroy "${destroy}": use true or false`);
        try {
          const r = await rt.deleteTask(name, { destroy: destroy === "true" });
          if (r && !r.ok) return err(500, `Destroying task "${name}" failed, the task is kept: ${r.error ?? ""}\n${r.outputTail}`);
        } catch (e) {
          return err(500, errorMessage(e));
        }
        return { status: 202, body: { request_id: requestId } };
      }
      return err(405, `Method ${method} is not allowed on ${path}`);
    }
    return err(404, `No such endpoint: ${method} ${path}`);
  };
}

function parseTaskBody(body: string, rt: SyncRuntime): { task: TaskConfig; definition: string } | { error: ApiAnswer } {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return { error: err(400, "The body is not JSON: send { \"task\": { … } }") };
  }
  const task = typeof v === "object" && v !== null && "task" in v ? (v as { task: unknown }).task : undefined;
  if (typeof task !== "object" || task === null || Array.isArray(task)) return { error: err(400, 'The body must be { "task": { … } }') };
  const definition = JSON.stringify(task);
  try {
    return { task: parseTaskDocument({ file: "request", text: definition }, rt.config), definition };
  } catch (e) {
    if (e instanceof ConfigError) return { error: err(400, e.message) };
    throw e;
  }
}

/** Serve the API on a TCP port; resolves once listening, with the bound port. */
export function serveSyncApi(handle: ReturnType<typeof syncApiHandler>, options: { host: string; port: number }): Promise<{ server: Server; port: number }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > 1 << 20) req.destroy();
      else chunks.push(c);
    });
    req.on("end", () => {
      handle(req.method ?? "GET", req.url ?? "/", Buffer.concat(chunks).toString("utf8"))
        .catch((e: unknown) => err(500, errorMessage(e)))
        .then((a) => {
          res.writeHead(a.status, { "content-type": "application/json", ...(a.headers ?? {}) });
          res.end(JSON.stringify(a.body));
        });
    });
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(options.port, options.host, () => {
      const addr = server.address();
      ok({ server, port: typeof addr === "object" && addr ? addr.port : options.port });
    });
  });
}
