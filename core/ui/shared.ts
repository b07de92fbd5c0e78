// What the web UI's pages share: the page context, API shapes, the error
// box, health badges and links.
import type { ApiError } from "./api.ts";
import { type Attrs, h, replace } from "./dom.ts";

/** What a page gets: where to draw, the datacenter, and how to register cleanups. */
export interface PageContext {
  root: HTMLElement;
  dc: string;
  /** The agent's own node name (round-trip times are measured from it). */
  agentNode: string;
  /** Called when the page is left (stop blocking queries). */
  onLeave(fn: () => void): void;
  /** Show an error (or clear it with undefined) above the page. */
  showError(err: ApiError | undefined): void;
}

export type Status = "passing" | "warning" | "critical" | "maintenance";

export interface HealthCheck {
  Node: string;
  CheckID: string;
  Name: string;
  Status: Status;
  Notes: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags?: string[] | null;
  Type?: string;
}

export interface CatalogNode {
  ID?: string;
  Node: string;
  Address: string;
  Datacenter?: string;
  TaggedAddresses?: Record<string, string> | null;
  Meta?: Record<string, string> | null;
}

export interface AgentService {
  ID: string;
  Service: string;
  Tags?: string[] | null;
  Address: string;
  Port: number;
  Meta?: Record<string, string> | null;
}

export interface ServiceEntry {
  Node: CatalogNode;
  Service: AgentService;
  Checks: HealthCheck[];
}

export interface Session {
  ID: string;
  Name: string;
  Node: string;
  Behavior: string;
  TTL: string;
  LockDelay: number;
  CreateIndex: number;
}

/** `#/<dc>/<rest>`, each part percent-encoded. */
export function href(dc: string, ...parts: string[]): string {
  return `#/${encodeURIComponent(dc)}/${parts.map((p) => p.split("/").map(encodeURIComponent).join("/")).join("/")}`;
}

/** The worst of a set of check states (critical > warning > passing), "passing" for none. */
export function worst(statuses: Iterable<string>): Status {
  let w: Status = "passing";
  for (const s of statuses) {
    if (s === "critical" || s === "maintenance") return "critical";
    if (s === "warning") w = "warning";
  }
  return w;
}

const statusLabel: Record<string, string> = { passing: "passing", warning: "warning", critical: "critical", maintenance: "critical" };

export function badge(status: string, text?: string | number): HTMLElement {
  const s = statusLabel[status] ?? "unknown";
  return h("span", { class: `badge ${s}`, title: s }, h("span", { class: "dot", "aria-hidden": "true" }), text === undefined ? s : `${text} ${s}`);
}

/** Health counts: "3 passing 1 critical" (zeros left out; "no checks" when all are). */
export function counts(c: { passing: number; warning: number; critical: number }): HTMLElement {
  const parts = (["passing", "warning", "critical"] as const).filter((s) => c[s] > 0).map((s) => badge(s, c[s]));
  return h("span", { class: "counts" }, parts.length ? parts : h("span", { class: "muted" }, "no checks"));
}

export function tagList(tags: readonly string[] | null | undefined): HTMLElement | null {
  if (!tags || tags.length === 0) return null;
  return h("span", { class: "tags" }, tags.map((t) => h("span", { class: "tag" }, t)));
}

export function metaTable(meta: Record<string, string> | null | undefined): HTMLElement {
  const entries = Object.entries(meta ?? {});
  if (entries.length === 0) return h("p", { class: "muted" }, "No metadata");
  return h("dl", { class: "meta" }, entries.map(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

export function checkList(checks: readonly HealthCheck[]): HTMLElement {
  if (checks.length === 0) return h("p", { class: "muted" }, "No checks");
  return h("ul", { class: "checks" }, checks.map((c) =>
    h("li", { class: `check ${statusLabel[c.Status] ?? ""}`, "data-check": c.CheckID },
      h("div", { class: "check-head" }, badge(c.Status), h("strong", null, c.Name || c.CheckID), c.Type ? h("span", { class: "muted" }, ` ${c.Type}`) : null, c.ServiceName ? h("span", { class: "muted" }, ` (service ${c.ServiceName})`) : h("span", { class: "muted" }, " (node)")),
      c.Notes ? h("p", { class: "notes" }, c.Notes) : null,
      h("pre", { class: "output" }, c.Output || "(no output)"),
    )
  ));
}

export function heading(title: string, ...rest: (HTMLElement | string | null)[]): HTMLElement {
  return h("div", { class: "page-head" }, h("h1", { tabindex: "-1" }, title), ...rest);
}

/**
 * Ask in `box` before something that cannot be undone: the question, a
 * danger button (with `attrs`) that runs `action`, whose error goes to the
 * page's error box, and Cancel, which empties the box. The first button
 * takes the focus.
 */
export function askFirst(ctx: PageContext, box: HTMLElement, o: { question: string; yes: string; attrs?: Attrs; action: () => Promise<void> }): void {
  replace(box, o.question,
    h("button", {
      type: "button",
      class: "danger",
      ...o.attrs,
      onclick: async () => {
        try {
          await o.action();
        } catch (e) {
          ctx.showError(e as ApiError);
        }
      },
    }, o.yes),
    h("button", { type: "button", onclick: () => replace(box) }, "Cancel"));
  (box.querySelector("button") as HTMLButtonElement).focus();
}
