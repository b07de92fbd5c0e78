// `audit {}`: the audit log, open in cairn (Consul keeps it for Enterprise).
// One JSON line per answered HTTP request: when, the token's AccessorID
// (never the secret: the query string, where `?token=` lives, is left out),
// method, path, datacenter, status and duration; refused requests included.
// Written to a file sink with Consul's rotation settings (rotate_bytes,
// rotate_duration, rotate_max_files), appended to across restarts.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Clock } from "../clock/clock.ts";
import { isoTimestamp } from "../clock/utc_text.ts";
import type { AgentConfig } from "../config/types.ts";
import { parseDuration } from "../config/duration.ts";
import { ConfigError } from "../errors.ts";
import type { AuditEntry, AuditSink } from "../http/router.ts";
import { LogFileSink } from "../log/file_sink_node.ts";

function bad(field: string, message: string): never {
  throw new ConfigError(message, { file: "", field: `audit.sink.${field}` });
}

/** The audit sink `audit {}` asks for; undefined when off. Throws ConfigError for a sink cairn cannot write. */
export function createAuditSink(config: AgentConfig, clock: Clock): (AuditSink & { close(): void }) | undefined {
  const audit = config.audit;
  if (!audit?.enabled) return undefined;
  const sinks = Object.entries(audit.sink ?? {});
  if (sinks.length === 0) bad("", "audit.enabled needs a sink: audit { sink \"name\" { type = \"file\" … } }");
  if (sinks.length > 1) bad("", "Only one audit sink is supported");
  const [name, raw] = sinks[0]! as [string, Record<string, unknown>];
  const type = raw.type ?? "file";
  if (type !== "file") bad(`${name}.type`, `Invalid audit sink type "${String(type)}": only "file" is supported`);
  const format = raw.format ?? "json";
  if (format !== "json") bad(`${name}.format`, `Invalid audit sink format "${String(format)}": only "json" is supported`);
  const path = raw.path;
  if (typeof path !== "string" || path === "") bad(`${name}.path`, "The audit sink needs a path");
  const num = (k: string): number => {
    const v = raw[k];
    if (v === undefined) return 0;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) bad(`${name}.${k}`, `Invalid audit sink ${k}: expected a whole number`);
    return v;
  };
  let rotateDurationMs = 0;
  if (raw.rotate_duration !== undefined) {
    const ms = typeof raw.rotate_duration === "string" ? parseDuration(raw.rotate_duration) : undefined;
    if (ms === undefined) bad(`${name}.rotate_duration`, `Invalid audit sink rotate_duration ${JSON.stringify(raw.rotate_duration)}`);
    rotateDurationMs = ms;
  }
  mkdirSync(dirname(path), { recursive: true });
  const file = new LogFileSink({
    path,
    rotateBytes: num("rotate_bytes"),
    rotateDurationMs,
    maxFiles: num("rotate_max_files"),
    now: () => clock.wallNow(),
    append: true,
    format: (record) => JSON.stringify(record.fields),
  });
  const datacenter = config.datacenter;
  return {
    now: () => clock.now(),
    record(e: AuditEntry) {
      const at = isoTimestamp(clock.wallNow());
      file.write({
        timeMs: 0,
        level: "info",
        name: "audit",
        message: "",
        fields: {
          created_at: at,
          event_type: "audit",
          payload: {
            type: "HTTPEvent",
            timestamp: at,
            auth: { accessor_id: e.accessorId },
            request: { operation: e.method, endpoint: e.path, datacenter },
            response: { status: String(e.status) },
            duration_ms: Math.round(e.durationMs * 1000) / 1000,
          },
        },
      });
    },
    close: () => file.close(),
  };
}
