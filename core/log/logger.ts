// Structured, named loggers. A Logger is injected everywhere; nothing in
// core/ writes to the console directly. Sinks decide where lines go.
import { isoTimestamp } from "../clock/utc_text.ts";

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

export const logLevels: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error"];

export type LogFields = Record<string, unknown>;

export interface LogRecord {
  timeMs: number;
  level: LogLevel;
  name: string;
  message: string;
  fields: LogFields;
}

export interface LogSink {
  write(record: LogRecord): void;
}

export interface Logger {
  trace(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A child logger whose name is `parent.name`. */
  named(name: string): Logger;
  /** A child logger that adds these fields to every record. */
  with(fields: LogFields): Logger;
  isEnabled(level: LogLevel): boolean;
}

export function parseLogLevel(text: string): LogLevel | undefined {
  const t = text.trim().toLowerCase();
  if (t === "warning") return "warn";
  if (t === "err") return "error";
  return (logLevels as readonly string[]).includes(t) ? (t as LogLevel) : undefined;
}

/** The lowest level a logger emits, shared and changeable at run time (a `monitor` asking for debug). */
export interface LogThreshold {
  rank: number;
}

export function levelRank(level: LogLevel): number {
  return logLevels.indexOf(level);
}

export function createLogger(options: {
  sink: LogSink;
  /** A fixed level, or a threshold that may move (FanoutSink.threshold). Default info. */
  level?: LogLevel | LogThreshold;
  name?: string;
  now?: () => number;
}): Logger {
  const level = options.level ?? "info";
  const threshold = typeof level === "string" ? { rank: levelRank(level) } : level;
  const now = options.now ?? (() => Date.now());
  return makeLogger(options.sink, threshold, options.name ?? "", {}, now);
}

function makeLogger(sink: LogSink, threshold: LogThreshold, name: string, base: LogFields, now: () => number): Logger {
  const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
    if (levelRank(level) < threshold.rank) return;
    sink.write({ timeMs: now(), level, name, message, fields: fields ? { ...base, ...fields } : base });
  };
  return {
    trace: (m, f) => emit("trace", m, f),
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    named: (child) => makeLogger(sink, threshold, name ? `${name}.${child}` : child, base, now),
    with: (fields) => makeLogger(sink, threshold, name, { ...base, ...fields }, now),
    isEnabled: (level) => levelRank(level) >= threshold.rank,
  };
}

/** Consul-like text: `2026-11-20T23:31:04.123Z [INFO]  agent.http: started: port=8500`. */
export function formatText(r: LogRecord): string {
  const level = `[${r.level.toUpperCase()}]`.padEnd(7);
  const pairs = Object.entries(r.fields).map(([k, v]) => `${k}=${formatValue(v)}`);
  const tail = pairs.length ? `: ${pairs.join(" ")}` : "";
  return `${isoTimestamp(r.timeMs)} ${level} ${r.name ? `${r.name}: ` : ""}${r.message}${tail}`;
}

export function formatJson(r: LogRecord): string {
  const out: Record<string, unknown> = {
    "@level": r.level,
    "@message": r.message,
    "@module": r.name,
    "@timestamp": isoTimestamp(r.timeMs),
  };
  for (const [k, v] of Object.entries(r.fields)) out[k] = v instanceof Error ? v.message : v;
  return JSON.stringify(out);
}

function formatValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === "string") return /[\s"=]/.test(v) || v === "" ? JSON.stringify(v) : v;
  if (v === undefined) return "<nil>";
  if (typeof v === "object" && v !== null) return JSON.stringify(v);
  return String(v);
}

/** Keeps records in memory; tests print them on failure. */
export class CaptureSink implements LogSink {
  readonly records: LogRecord[] = [];
  write(record: LogRecord): void {
    this.records.push(record);
  }
  text(): string {
    return this.records.map(formatText).join("\n");
  }
  clear(): void {
    this.records.length = 0;
  }
}

/**
 * Sends each record to the sinks that want its level (stderr at the agent's
 * level plus `monitor` streams at theirs). `threshold` follows the lowest
 * level any sink wants; give it to createLogger so records nobody wants are
 * not even built.
 */
export class FanoutSink implements LogSink {
  readonly threshold: LogThreshold = { rank: levelRank("error") };
  readonly #sinks = new Map<LogSink, number>();

  /** Add a sink for records at `level` and above (default: every level). */
  add(sink: LogSink, level: LogLevel = "trace"): void {
    this.#sinks.set(sink, levelRank(level));
    this.#recompute();
  }

  delete(sink: LogSink): void {
    this.#sinks.delete(sink);
    this.#recompute();
  }

  write(record: LogRecord): void {
    const rank = levelRank(record.level);
    for (const [s, min] of this.#sinks) if (rank >= min) s.write(record);
  }

  #recompute(): void {
    let min = levelRank("error");
    for (const r of this.#sinks.values()) min = Math.min(min, r);
    this.threshold.rank = min;
  }
}

/** The last `capacity` records, for a `monitor` that joins late. */
export class RecentSink implements LogSink {
  readonly #buf: LogRecord[] = [];
  readonly #capacity: number;
  constructor(capacity = 512) {
    this.#capacity = capacity;
  }
  write(record: LogRecord): void {
    if (this.#buf.length === this.#capacity) this.#buf.shift();
    this.#buf.push(record);
  }
  records(): readonly LogRecord[] {
    return this.#buf;
  }
}

export const discardSink: LogSink = { write() {} };

/** A logger that drops everything. */
export function nullLogger(): Logger {
  return createLogger({ sink: discardSink, level: "error" });
}
