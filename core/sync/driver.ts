// The seam every sync driver sits behind (terraform, exec): apply a task's
// rendered inputs, inspect what an apply would do, destroy what it made.
import type { TaskConfig } from "./config.ts";
import type { RenderedInputs } from "./render.ts";
import type { Trigger } from "./scheduler.ts";

export interface DriverRun {
  runId: string;
  task: TaskConfig;
  trigger: Trigger | "inspect" | "destroy" | "once";
  /** The module's variables (services, consul_kv, catalog_services). */
  inputs: RenderedInputs;
}

export interface DriverResult {
  ok: boolean;
  exitCode: number;
  /** The last part of what the driver printed (redacted). */
  outputTail: string;
  /** Plan text for inspect, when the driver has one. */
  plan?: string;
  /** Inspect: whether an apply would change anything (unknown: compare render hashes). */
  changesPresent?: boolean;
  error?: string;
}

export interface SyncDriver {
  readonly kind: string;
  /** Warnings found while starting (a tool version outside the tested range, …). */
  readonly warnings: readonly string[];
  apply(run: DriverRun, signal: AbortSignal): Promise<DriverResult>;
  inspect(run: DriverRun, signal: AbortSignal): Promise<DriverResult>;
  destroy(run: DriverRun, signal: AbortSignal): Promise<DriverResult>;
}

/** Keep the last `max` characters of output. */
export function tail(text: string, max = 4096): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}

/** Replace every occurrence of a secret with a mask (provider blocks, tokens). */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join("[redacted]");
  return out;
}
