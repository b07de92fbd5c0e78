// Services: the list (instance and health counts, tags, search, filters, sort; the
// filtering by name, tag and meta is the server's, through ?filter) and one
// service's instances with every check. Both follow blocking queries.
import { type ApiError, type Watch, watch, withQuery } from "./api.ts";
import { h, replace, VirtualList } from "./dom.ts";
import { badge, checkList, counts, heading, href, metaTable, type HealthCheck, type PageContext, type ServiceEntry, tagList, worst } from "./shared.ts";

/** /v1/internal/ui/services (core/http/ui_services.ts). */
interface Summary {
  Name: string;
  Tags: string[];
  InstanceCount?: number;
}

interface Row {
  name: string;
  tags: string[];
  instances?: number;
  passing: number;
  warning: number;
  critical: number;
  status: string;
}

/** A bexpr string literal. */
function lit(s: string): string {
  return JSON.stringify(s);
}

/** The ?filter for the catalog: name contains, has tag, meta key = value ("k=v"), joined with "and". */
export function servicesFilter(f: { search: string; tag: string; meta: string }): string {
  const parts: string[] = [];
  if (f.search.trim()) parts.push(`ServiceName contains ${lit(f.search.trim())}`);
  if (f.tag.trim()) parts.push(`${lit(f.tag.trim())} in ServiceTags`);
  const meta = f.meta.trim();
  if (meta) {
    const i = meta.indexOf("=");
    parts.push(i < 0 ? `${lit(meta)} in ServiceMeta` : `ServiceMeta[${lit(meta.slice(0, i).trim())}] == ${lit(meta.slice(i + 1).trim())}`);
  }
  return parts.join(" and ");
}

const rank: Record<string, number> = { critical: 0, warning: 1, passing: 2 };

export function servicesPage(ctx: PageContext): void {
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const search = h("input", { type: "search", id: "service-search", placeholder: "Name contains…", "aria-label": "Search services by name", value: params.get("q") ?? "" });
  const tag = h("input", { type: "search", id: "service-tag", placeholder: "Tag", "aria-label": "Filter by tag", value: params.get("tag") ?? "" });
  const meta = h("input", { type: "search", id: "service-meta", placeholder: "Meta key=value", "aria-label": "Filter by meta (key=value)", value: params.get("meta") ?? "" });
  const health = h("select", { id: "service-health", "aria-label": "Filter by health" },
    h("option", { value: "" }, "Any health"), h("option", { value: "passing" }, "Passing"), h("option", { value: "warning" }, "Warning"), h("option", { value: "critical" }, "Critical"));
  health.value = params.get("health") ?? "";
  const sort = h("select", { id: "service-sort", "aria-label": "Sort" },
    h("option", { value: "name" }, "Name A–Z"), h("option", { value: "-name" }, "Name Z–A"), h("option", { value: "health" }, "Unhealthiest first"));
  sort.value = params.get("sort") ?? "name";
  const summary = h("p", { class: "summary", "aria-live": "polite" }, "Loading…");
  const list = new VirtualList<Row>({
    rowHeight: 44,
    label: "Services",
    render: (r) => h("div", { class: "row", "data-service": r.name },
      h("a", { href: href(ctx.dc, "services", r.name), class: "name" }, r.name),
      r.instances === undefined ? null : h("span", { class: "instances" }, `${r.instances} instance${r.instances === 1 ? "" : "s"}`),
      counts(r), tagList(r.tags)),
  });
  replace(ctx.root, heading("Services", summary), h("div", { class: "filters" }, search, tag, meta, health, sort), list.element);

  let services: Summary[] | undefined;
  const checksByService = new Map<string, HealthCheck[]>();
  const draw = () => {
    if (!services) return;
    const rows: Row[] = [];
    for (const { Name: name, Tags: tags, InstanceCount: instances } of services) {
      const checks = checksByService.get(name) ?? [];
      const c = { passing: 0, warning: 0, critical: 0 };
      for (const ch of checks) c[ch.Status === "maintenance" ? "critical" : ch.Status]++;
      const status = worst(checks.map((ch) => ch.Status));
      if (health.value && status !== health.value) continue;
      rows.push({ name, tags: tags ?? [], instances, ...c, status });
    }
    const by = sort.value;
    rows.sort((a, b) => by === "health" ? rank[a.status]! - rank[b.status]! || a.name.localeCompare(b.name) : by === "-name" ? b.name.localeCompare(a.name) : a.name.localeCompare(b.name));
    list.items = rows;
    summary.textContent = `${rows.length} service${rows.length === 1 ? "" : "s"}`;
  };

  const errors = new Set<string>();
  const onError = (which: string) => (err: ApiError) => {
    errors.add(which);
    if (!services) summary.textContent = "Not loaded";
    ctx.showError(err);
  };
  const ok = (which: string) => {
    errors.delete(which);
    if (errors.size === 0) ctx.showError(undefined);
  };

  let catalog: Watch | undefined;
  const restartCatalog = () => {
    catalog?.stop();
    const filter = servicesFilter({ search: search.value, tag: tag.value, meta: meta.value });
    // Names, tags and instance counts in one answer, filtered by the server.
    catalog = watch<Summary[]>(withQuery("/v1/internal/ui/services", { dc: ctx.dc, filter }), {
      onData: (body) => {
        ok("catalog");
        services = body ?? [];
        draw();
      },
      onError: onError("catalog"),
    });
  };
  restartCatalog();
  const checks = watch<HealthCheck[]>(withQuery("/v1/health/state/any", { dc: ctx.dc }), {
    onData: (body) => {
      ok("checks");
      checksByService.clear();
      for (const c of body ?? []) {
        if (!c.ServiceName) continue;
        const l = checksByService.get(c.ServiceName);
        if (l) l.push(c);
        else checksByService.set(c.ServiceName, [c]);
      }
      draw();
    },
    onError: onError("checks"),
  });
  ctx.onLeave(() => {
    catalog?.stop();
    checks.stop();
  });

  // Typing narrows the server's answer (after a pause); the URL keeps the filters for reload and sharing.
  let timer = 0;
  const filtersChanged = () => {
    const q = new URLSearchParams();
    for (const [k, v] of [["q", search.value], ["tag", tag.value], ["meta", meta.value], ["health", health.value], ["sort", sort.value === "name" ? "" : sort.value]] as const) if (v) q.set(k, v);
    history.replaceState(null, "", `${href(ctx.dc, "services")}${q.size ? `?${q}` : ""}`);
  };
  for (const input of [search, tag, meta]) {
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = window.setTimeout(() => {
        filtersChanged();
        restartCatalog();
      }, 250);
    });
  }
  for (const select of [health, sort]) {
    select.addEventListener("change", () => {
      filtersChanged();
      draw();
    });
  }
}

export function servicePage(ctx: PageContext, name: string): void {
  const body = h("div", null, h("p", null, "Loading…"));
  replace(ctx.root, h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: href(ctx.dc, "services") }, "Services"), " / ", name), heading(name), body);
  const w = watch<ServiceEntry[]>(withQuery(`/v1/health/service/${encodeURIComponent(name)}`, { dc: ctx.dc }), {
    onData: (entries) => {
      ctx.showError(undefined);
      entries = entries ?? [];
      if (entries.length === 0) {
        replace(body, h("p", { class: "empty" }, `No instances of "${name}" are registered in ${ctx.dc}.`));
        return;
      }
      const all = entries.flatMap((e) => e.Checks);
      const c = { passing: 0, warning: 0, critical: 0 };
      for (const ch of all) c[ch.Status === "maintenance" ? "critical" : ch.Status]++;
      replace(body,
        h("p", { class: "summary" }, `${entries.length} instance${entries.length === 1 ? "" : "s"} `, counts(c)),
        h("ul", { class: "instances" }, entries.map((e) => {
          const addr = `${e.Service.Address || e.Node.Address}:${e.Service.Port}`;
          return h("li", { class: "instance card", "data-instance": e.Service.ID },
            h("div", { class: "card-head" },
              badge(worst(e.Checks.map((ch) => ch.Status))),
              h("strong", null, e.Service.ID),
              h("span", null, " on ", h("a", { href: href(ctx.dc, "nodes", e.Node.Node) }, e.Node.Node)),
              h("code", { class: "addr" }, addr)),
            tagList(e.Service.Tags),
            h("details", null, h("summary", null, "Meta"), metaTable(e.Service.Meta)),
            checkList(e.Checks));
        })));
    },
    onError: (err) => ctx.showError(err),
  });
  ctx.onLeave(() => w.stop());
}
