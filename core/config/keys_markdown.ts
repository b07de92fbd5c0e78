// The key table (keys.ts) as the Markdown section of docs/configuration.md;
// keys_markdown_test.ts fails when the page and the table disagree
// (REWRITE=1 rewrites the section).
import { keyRows, type KeyRow, type KeyStatus } from "./keys.ts";

export const KEYS_BEGIN = "<!-- BEGIN KEY TABLE: generated from core/config/keys.ts, REWRITE=1 node --import tsx --test core/config/keys_markdown_test.ts -->";
export const KEYS_END = "<!-- END KEY TABLE -->";

/** Counts per status, over every row (agent, service and check keys). */
export function keyCounts(): Record<KeyStatus | "total", number> {
  const rows = keyRows();
  const all = [...rows.agent, ...rows.service, ...rows.check];
  const count = (s: KeyStatus) => all.filter((r) => r.status === s).length;
  return { total: all.length, implemented: count("implemented"), planned: count("planned"), ignored: count("ignored") };
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

function remark(r: KeyRow): string {
  const parts: string[] = [];
  if (r.note) parts.push(r.note);
  if (r.aliases?.length) parts.push(`also ${r.aliases.map((a) => `\`${a}\``).join(", ")}`);
  if (r.replacedBy) parts.push(`deprecated by Consul: use \`${r.replacedBy}\``);
  return cell(parts.join("; "));
}

function table(rows: readonly KeyRow[]): string {
  const lines = ["| Key | Status | Notes |", "| --- | --- | --- |"];
  for (const r of rows) lines.push(`| \`${r.path}\` | ${r.status} | ${remark(r)} |`);
  return lines.join("\n");
}

/** The generated section, markers included. */
export function keysMarkdown(): string {
  const rows = keyRows();
  const c = keyCounts();
  return [
    KEYS_BEGIN,
    "",
    `${c.total} keys: ${c.implemented} implemented, ${c.planned} planned, ${c.ignored} ignored.`,
    "",
    "### Agent keys",
    "",
    table(rows.agent),
    "",
    "### Service definition keys",
    "",
    "For `service` and each element of `services`. Keys match in any case and with or without `_` (`enable_tag_override` or `EnableTagOverride`).",
    "",
    table(rows.service),
    "",
    "### Check definition keys",
    "",
    "For `check`, each element of `checks`, and the `check` and `checks` of a service. Keys match as for services.",
    "",
    table(rows.check),
    "",
    KEYS_END,
  ].join("\n");
}
