// `cairn sync task enable|disable|create|delete|list`: clients of a running
// sync instance's API (CTS's `consul-terraform-sync task …`). They never
// prompt: CTS asks for approval after an inspect unless -auto-approve;
// here -auto-approve is accepted and a plan is shown only with -inspect.
import { parseHcl, HclSyntaxError } from "../core/hcl/mod.ts";
import { parseCommandFlags } from "./_command.ts";
import { bool, formatHelp, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";

const common: FlagSpec[] = [
  { name: "http-addr", kind: "string", valueName: "address", usage: "The sync instance's API address. Default http://localhost:8558, or CAIRN_SYNC_HTTP_ADDR / CTS_HTTP_ADDR." },
  { name: "port", kind: "int", valueName: "port", usage: "Deprecated in CTS: the API port on localhost (use -http-addr)." },
];

function baseUrl(p: ParsedFlags, io: CliIo): string {
  let a = str(p, "http-addr") || io.env.CAIRN_SYNC_HTTP_ADDR || io.env.CTS_HTTP_ADDR || "";
  if (a === "" && p.values.has("port")) a = `localhost:${String(p.values.get("port"))}`;
  if (a === "") a = "localhost:8558";
  if (!/^https?:\/\//.test(a)) a = `http://${a}`;
  return a.replace(/\/+$/, "");
}

async function call(p: ParsedFlags, io: CliIo, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const f = io.fetch ?? globalThis.fetch;
  const res = await f(`${baseUrl(p, io)}${path}`, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = { error: { message: text } };
  }
  return { status: res.status, json };
}

function errorText(json: unknown): string {
  const m = (json as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof m === "string" ? m : JSON.stringify(json);
}

type Action = (p: ParsedFlags, io: CliIo) => Promise<number>;

function command(name: string, synopsis: string, usage: string, flags: FlagSpec[], action: Action): Command {
  const cmd: Command = {
    name,
    synopsis,
    help: () => formatHelp(usage, [...common, ...flags]),
    async run(args, io) {
      const p = parseCommandFlags(cmd, args, [...common, ...flags], io);
      if (typeof p === "number") return p;
      try {
        return await action(p, io);
      } catch (err) {
        io.stderr(`Error: cannot reach the sync API at ${baseUrl(p, io)}: ${(err as Error).message}\n`);
        return 1;
      }
    },
  };
  return cmd;
}

function oneName(p: ParsedFlags, io: CliIo, verb: string): string | undefined {
  if (p.positionals.length !== 1) {
    io.stderr(`Error: ${verb} takes exactly one task name\n`);
    return undefined;
  }
  return p.positionals[0]!;
}

const approve: FlagSpec = { name: "auto-approve", kind: "bool", usage: "Accepted for CTS compatibility: cairn never prompts." };

async function setEnabled(p: ParsedFlags, io: CliIo, enabled: boolean): Promise<number> {
  const name = oneName(p, io, enabled ? "enable" : "disable");
  if (name === undefined) return 1;
  if (enabled && bool(p, "inspect")) {
    const r = await call(p, io, "PATCH", `/v1/tasks/${encodeURIComponent(name)}?run=inspect`, {});
    const plan = (r.json as { inspect?: { plan?: string; changes_present?: boolean } } | null)?.inspect;
    if (r.status !== 200) {
      io.stderr(`Error: inspecting task "${name}": ${errorText(r.json)}\n`);
      return 1;
    }
    io.stdout(`==> Inspecting "${name}" (changes present: ${plan?.changes_present === true})\n${plan?.plan ?? ""}\n`);
  }
  const r = await call(p, io, "PATCH", `/v1/tasks/${encodeURIComponent(name)}`, { enabled });
  if (r.status !== 200) {
    io.stderr(`Error: ${enabled ? "enabling" : "disabling"} task "${name}": ${errorText(r.json)}\n`);
    return 1;
  }
  io.stdout(`==> '${name}' ${enabled ? "enable" : "disable"} complete!\n`);
  return 0;
}

export const syncTaskEnable = command("sync task enable", "Enable a sync task (it runs once now)", "\nUsage: cairn sync task enable [options] <task name>\n", [approve, { name: "inspect", kind: "bool", usage: "Show what the task would change before enabling it." }], (p, io) => setEnabled(p, io, true));

export const syncTaskDisable = command("sync task disable", "Disable a sync task (its watchers stay)", "\nUsage: cairn sync task disable [options] <task name>\n", [], (p, io) => setEnabled(p, io, false));

export const syncTaskDelete = command(
  "sync task delete",
  "Delete a sync task",
  "\nUsage: cairn sync task delete [options] <task name>\n",
  [approve, { name: "destroy", kind: "bool", usage: "First destroy what the task made (terraform destroy; exec: CTS_ACTION=destroy)." }],
  async (p, io) => {
    const name = oneName(p, io, "delete");
    if (name === undefined) return 1;
    const r = await call(p, io, "DELETE", `/v1/tasks/${encodeURIComponent(name)}${bool(p, "destroy") ? "?destroy=true" : ""}`);
    if (r.status !== 202) {
      io.stderr(`Error: deleting task "${name}": ${errorText(r.json)}\n`);
      return 1;
    }
    io.stdout(`==> Task '${name}' deleted\n`);
    return 0;
  },
);

export const syncTaskCreate = command(
  "sync task create",
  "Create a sync task from a task file (HCL or JSON)",
  "\nUsage: cairn sync task create [options] -task-file=<file>\n",
  [approve, { name: "task-file", kind: "string", valueName: "path", usage: "The file with one task block (required)." }, { name: "run-now", kind: "bool", usage: "Run the task as soon as it is created." }],
  async (p, io) => {
    const file = str(p, "task-file");
    if (file === "") {
      io.stderr("Error: -task-file is required\n");
      return 1;
    }
    let text: string;
    try {
      text = new TextDecoder().decode(await io.readFile(file));
    } catch (err) {
      io.stderr(`Error: cannot read "${file}": ${(err as Error).message}\n`);
      return 1;
    }
    let value: Record<string, unknown>;
    try {
      value = parseHcl(text, { file }).value;
    } catch (err) {
      if (err instanceof HclSyntaxError) {
        io.stderr(`Error: ${file}:${err.line}: ${err.reason}\n`);
        return 1;
      }
      throw err;
    }
    let task: unknown = value.task ?? value;
    if (Array.isArray(task)) {
      if (task.length !== 1) {
        io.stderr(`Error: ${file}: give exactly one task block\n`);
        return 1;
      }
      task = task[0];
    }
    const r = await call(p, io, "POST", `/v1/tasks${bool(p, "run-now") ? "?run=now" : ""}`, { task });
    if (r.status !== 201) {
      io.stderr(`Error: creating the task: ${errorText(r.json).replace(/^request:/, `${file}:`)}\n`);
      return 1;
    }
    io.stdout(`==> Task '${(r.json as { task: { name: string } }).task.name}' created\n`);
    return 0;
  },
);

export const syncTaskList = command("sync task list", "List sync tasks and their status", "\nUsage: cairn sync task list [options]\n", [{ name: "format", kind: "string", valueName: "text|json", usage: "Output format." }], async (p, io) => {
  const r = await call(p, io, "GET", "/v1/status/tasks");
  if (r.status !== 200) {
    io.stderr(`Error: listing tasks: ${errorText(r.json)}\n`);
    return 1;
  }
  const tasks = r.json as Record<string, { task_name: string; status: string; enabled: boolean; services: string[] }>;
  if (str(p, "format") === "json") {
    io.stdout(`${JSON.stringify(tasks, null, 2)}\n`);
    return 0;
  }
  const rows = [["Name", "Enabled", "Status", "Services"], ...Object.values(tasks).map((t) => [t.task_name, String(t.enabled), t.status, t.services.join(",")])];
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  io.stdout(rows.map((row) => row.map((c, i) => c.padEnd(w[i]!)).join("  ").trimEnd()).join("\n") + "\n");
  return 0;
});

export const syncTaskCommands: Command[] = [syncTaskEnable, syncTaskDisable, syncTaskCreate, syncTaskDelete, syncTaskList];
