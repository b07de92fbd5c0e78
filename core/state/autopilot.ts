// The autopilot configuration (consul agent/consul/state/autopilot.go): one
// replicated row, written by the Autopilot command (MessageType 9) and carried
// in snapshots. A write with `cas` lands only when the stored row's
// modifyIndex equals the one given (0: only when there is none yet).

import { isIndex } from "./kvs_schema.ts";
import type { TableSchema } from "./table.ts";
import type { WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

/** What an operator sets (Consul's structs.AutopilotConfig, the fields cairn uses), in ms. */
export interface AutopilotSettings {
  cleanupDeadServers: boolean;
  lastContactThresholdMs: number;
  maxTrailingLogs: number;
  minQuorum: number;
  serverStabilizationTimeMs: number;
}

/** The stored row. */
export interface AutopilotConfig extends AutopilotSettings {
  createIndex: number;
  modifyIndex: number;
}

const rowKey = "config";

function isMs(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0;
}

/** Settings from a decoded command or snapshot row; undefined when malformed. */
export function autopilotSettingsFrom(raw: unknown): AutopilotSettings | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.cleanupDeadServers !== "boolean" || !isMs(r.lastContactThresholdMs) || !isIndex(r.maxTrailingLogs)) return undefined;
  if (!isIndex(r.minQuorum) || !isMs(r.serverStabilizationTimeMs)) return undefined;
  return {
    cleanupDeadServers: r.cleanupDeadServers,
    lastContactThresholdMs: r.lastContactThresholdMs,
    maxTrailingLogs: r.maxTrailingLogs,
    minQuorum: r.minQuorum,
    serverStabilizationTimeMs: r.serverStabilizationTimeMs,
  };
}

export const autopilotSchema: TableSchema<AutopilotConfig> = {
  name: "autopilot",
  keyOf: () => rowKey,
  fromRecord(raw) {
    const s = autopilotSettingsFrom(raw);
    const r = raw as Record<string, unknown>;
    if (!s || !isIndex(r.createIndex) || !isIndex(r.modifyIndex)) return undefined;
    return Object.freeze({ ...s, createIndex: r.createIndex, modifyIndex: r.modifyIndex });
  },
};

interface AutopilotReadable {
  tables: { autopilot: { getWatch(key: string, ws: WatchSet | undefined): AutopilotConfig | undefined } };
}

/** The stored configuration, or undefined before a leader stored one. */
export function autopilotConfigGet(state: AutopilotReadable, ws?: WatchSet): AutopilotConfig | undefined {
  return state.tables.autopilot.getWatch(rowKey, ws);
}

/** Store `settings`; with `cas`, only when the row's modifyIndex is `cas` (0: no row yet). Returns whether it was written. */
export function autopilotSetTxn(tx: WriteTxn, idx: number, settings: AutopilotSettings, cas?: number): boolean {
  const table = tx.tables.autopilot;
  const prev = table.get(rowKey);
  if (cas !== undefined && (prev?.modifyIndex ?? 0) !== cas) return false;
  tx.insert(table, Object.freeze({ ...settings, createIndex: prev?.createIndex ?? idx, modifyIndex: idx }));
  tx.setIndex("autopilot", idx);
  return true;
}

/** The Autopilot command: `{ config, cas? }` → true/false (a CAS that did not match), or an Error for a malformed one. */
export function applyAutopilotCommand(
  state: { write<R>(idx: number, fn: (tx: WriteTxn) => R): R },
  index: number,
  cmd: Record<string, unknown>,
): unknown {
  const settings = autopilotSettingsFrom(cmd.config);
  if (!settings) return new Error("Invalid autopilot request: malformed configuration");
  if (cmd.cas !== undefined && !isIndex(cmd.cas)) return new Error("Invalid autopilot request: bad cas index");
  const cas = cmd.cas as number | undefined;
  return state.write(index, (tx) => autopilotSetTxn(tx, index, settings, cas));
}
