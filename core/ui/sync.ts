// `cairn sync` tasks and their runs, as the daemon records them in this
// cluster's KV (core/sync/runtime_node.ts): <kv_path>task-state/<task>
// ({ enabled, appliedHash }), <kv_path>runs/<task>/<id> (one run record
// each), <kv_path>task-defs/<task> (tasks created through its API). The
// daemon's own API is on another port (and maybe another host); the KV is
// what every agent can show.
import { decodeBase64, kvPath, watch, withQuery } from "./api.ts";
import { h, replace } from "./dom.ts";
import { badge, heading, href, type PageContext } from "./shared.ts";

const PATH_KEY = "cairn-ui-sync-path";

interface RunRecord {
  id: string;
  task: string;
  trigger: string;
  status: "running" | "successful" | "errored";
  startTime: string;
  endTime?: string;
  exitCode?: number;
  outputTail?: string;
  error?: string;
  changedInputs?: string[];
}

interface TaskView {
  name: string;
  state?: { enabled?: boolean; appliedHash?: string };
  defined: boolean;
  runs: RunRecord[];
}

/** Tasks from the KV entries under the daemon's kv_path; entries that do not parse are skipped. */
export function syncTasks(entries: readonly { Key: string; Value: string | null }[], prefix: string): TaskView[] {
  const tasks = new Map<string, TaskView>();
  const task = (name: string) => {
    let t = tasks.get(name);
    if (!t) tasks.set(name, (t = { name, defined: false, runs: [] }));
    return t;
  };
  for (const e of entries) {
    const rest = e.Key.slice(prefix.length).split("/");
    let value: unknown;
    try {
      value = e.Value ? JSON.parse(decodeBase64(e.Value)) : undefined;
    } catch {
      value = undefined;
    }
    if (rest[0] === "task-state" && rest[1]) task(rest[1]).state = (value ?? {}) as TaskView["state"];
    else if (rest[0] === "task-defs" && rest[1]) task(rest[1]).defined = true;
    else if (rest[0] === "runs" && rest[1] && rest[2] && value && typeof value === "object") task(rest[1]).runs.push(value as RunRecord);
  }
  for (const t of tasks.values()) t.runs.sort((a, b) => (a.startTime < b.startTime ? 1 : a.startTime > b.startTime ? -1 : 0));
  return [...tasks.values()].sort((a, b) => a.name.localeCompare(b.name));
}

const runStatus: Record<string, string> = { successful: "passing", running: "warning", errored: "critical" };

export function syncPage(ctx: PageContext): void {
  const path = h("input", { type: "text", id: "sync-path", value: localStorage.getItem(PATH_KEY) ?? "consul-terraform-sync/", "aria-label": "The sync daemon's consul.kv_path" });
  const body = h("div", null, h("p", null, "Loading…"));
  const form = h("form", { class: "filters" }, h("label", { for: "sync-path" }, "KV path"), path, h("button", { type: "submit" }, "Show"));
  replace(ctx.root, heading("Sync tasks"), h("p", { class: "muted" }, "What cairn sync daemons record in this cluster's key/value store (their consul.kv_path)."), form, body);
  let w: { stop(): void } | undefined;
  const start = () => {
    w?.stop();
    const prefix = path.value.replace(/^\/+/, "").replace(/\/*$/, "/");
    w = watch<{ Key: string; Value: string | null }[] | null>(withQuery(kvPath(prefix), { recurse: true, dc: ctx.dc }), {
      onData: (entries) => {
        ctx.showError(undefined);
        const tasks = syncTasks(entries ?? [], prefix);
        if (tasks.length === 0) {
          replace(body, h("p", { class: "empty" }, `No sync task has recorded anything under "${prefix}". Start one with `, h("code", null, "cairn sync start -config-file …"), " pointed at this cluster, or enter the kv_path its configuration names."));
          return;
        }
        replace(body, tasks.map((t) => {
          const last = t.runs[0];
          return h("section", { class: "card", "data-task": t.name },
            h("div", { class: "card-head" }, h("h2", null, t.name), last ? badge(runStatus[last.status] ?? "warning", last.status) : h("span", { class: "muted" }, "no runs yet"),
              t.state?.enabled === false ? h("span", { class: "tag" }, "disabled") : null, t.defined ? h("span", { class: "tag" }, "created through the API") : null),
            t.state?.appliedHash ? h("p", { class: "muted" }, "Applied inputs ", h("code", null, t.state.appliedHash.slice(0, 16))) : null,
            t.runs.length === 0 ? null : h("ul", { class: "plain runs" }, t.runs.map((r) =>
              h("li", { "data-run": r.id },
                badge(runStatus[r.status] ?? "warning", r.status), " ", h("code", null, r.id), ` ${r.trigger}, started ${r.startTime}`, r.endTime ? `, ended ${r.endTime}` : "", r.exitCode !== undefined ? `, exit ${r.exitCode}` : "",
                r.changedInputs?.length ? h("span", { class: "muted" }, ` (changed: ${r.changedInputs.join(", ")})`) : null,
                r.error ? h("p", { class: "notes" }, r.error) : null,
                r.outputTail ? h("details", null, h("summary", null, "Output"), h("pre", { class: "output" }, r.outputTail)) : null))),
            h("p", null, h("a", { href: href(ctx.dc, "kv", `${prefix}runs/${t.name}/`) }, "Run records in Key/Value")));
        }));
      },
      onError: (e) => ctx.showError(e),
    });
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    localStorage.setItem(PATH_KEY, path.value);
    start();
  });
  start();
  ctx.onLeave(() => w?.stop());
}
