// Nodes: the list (health, address, meta; name search through the
// server's ?filter) and one node: its checks, service instances, round-trip
// times from network coordinates, and lock sessions (with invalidate).
import { api, type ApiError, type Watch, watch, withQuery } from "./api.ts";
import { h, replace, VirtualList } from "./dom.ts";
import { askFirst, badge, type CatalogNode, checkList, heading, href, metaTable, type AgentService, type HealthCheck, type PageContext, type Session, tagList, worst } from "./shared.ts";

export interface Coord {
  Vec: number[];
  Error: number;
  Adjustment: number;
  Height: number;
}

/** Estimated round trip between two coordinates, in ms (Consul's lib/coordinate ComputeDistance). */
export function rttMs(a: Coord, b: Coord): number {
  let sum = 0;
  for (let i = 0; i < Math.min(a.Vec.length, b.Vec.length); i++) sum += (a.Vec[i]! - b.Vec[i]!) ** 2;
  let dist = Math.sqrt(sum) + a.Height + b.Height;
  const adjusted = dist + a.Adjustment + b.Adjustment;
  if (adjusted > 0) dist = adjusted;
  return dist * 1000;
}

function fmtMs(ms: number): string {
  return ms < 1 ? `${ms.toFixed(3)} ms` : `${ms.toFixed(2)} ms`;
}

export function nodesPage(ctx: PageContext): void {
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const search = h("input", { type: "search", id: "node-search", placeholder: "Name contains…", "aria-label": "Search nodes by name", value: params.get("q") ?? "" });
  const health = h("select", { id: "node-health", "aria-label": "Filter by health" },
    h("option", { value: "" }, "Any health"), h("option", { value: "passing" }, "Passing"), h("option", { value: "warning" }, "Warning"), h("option", { value: "critical" }, "Critical"));
  const summary = h("p", { class: "summary", "aria-live": "polite" }, "Loading…");
  type Row = { node: CatalogNode; status: string };
  const list = new VirtualList<Row>({
    rowHeight: 44,
    label: "Nodes",
    render: (r) => h("div", { class: "row", "data-node": r.node.Node },
      badge(r.status),
      h("a", { href: href(ctx.dc, "nodes", r.node.Node), class: "name" }, r.node.Node),
      h("code", { class: "addr" }, r.node.Address),
      h("span", { class: "tags" }, Object.entries(r.node.Meta ?? {}).map(([k, v]) => h("span", { class: "tag" }, `${k}=${v}`)))),
  });
  replace(ctx.root, heading("Nodes", summary), h("div", { class: "filters" }, search, health), list.element);

  let nodes: CatalogNode[] | undefined;
  const checksByNode = new Map<string, string[]>();
  // Rows wait for the checks too: drawn from the nodes alone, every node showed "passing" until its checks came.
  let checksLoaded = false;
  const draw = () => {
    if (!nodes || !checksLoaded) return;
    const rows = nodes.map((node) => ({ node, status: worst(checksByNode.get(node.Node) ?? []) })).filter((r) => !health.value || r.status === health.value);
    rows.sort((a, b) => a.node.Node.localeCompare(b.node.Node));
    list.items = rows;
    summary.textContent = `${rows.length} node${rows.length === 1 ? "" : "s"}`;
  };
  let catalog: Watch | undefined;
  const restart = () => {
    catalog?.stop();
    const q = search.value.trim();
    catalog = watch<CatalogNode[]>(withQuery("/v1/catalog/nodes", { dc: ctx.dc, filter: q ? `Node contains ${JSON.stringify(q)}` : "" }), {
      onData: (body) => {
        ctx.showError(undefined);
        nodes = body ?? [];
        draw();
      },
      onError: (err) => {
        if (!nodes) summary.textContent = "Not loaded";
        ctx.showError(err);
      },
    });
  };
  restart();
  const checks = watch<HealthCheck[]>(withQuery("/v1/health/state/any", { dc: ctx.dc }), {
    onData: (body) => {
      checksLoaded = true;
      checksByNode.clear();
      for (const c of body ?? []) {
        const l = checksByNode.get(c.Node);
        if (l) l.push(c.Status);
        else checksByNode.set(c.Node, [c.Status]);
      }
      draw();
    },
    onError: (err) => {
      if (!checksLoaded) summary.textContent = "Not loaded";
      ctx.showError(err);
    },
  });
  ctx.onLeave(() => {
    catalog?.stop();
    checks.stop();
  });
  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => {
      history.replaceState(null, "", `${href(ctx.dc, "nodes")}${search.value ? `?q=${encodeURIComponent(search.value)}` : ""}`);
      restart();
    }, 250);
  });
  health.addEventListener("change", draw);
}

export function nodePage(ctx: PageContext, name: string): void {
  const info = h("section", { "aria-labelledby": "node-info" }, h("p", null, "Loading…"));
  const checksBox = h("div", null, h("p", null, "Loading…"));
  const servicesBox = h("div", null, h("p", null, "Loading…"));
  const rttBox = h("div", null, h("p", null, "Loading…"));
  const sessionsBox = h("div", null, h("p", null, "Loading…"));
  replace(ctx.root,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: href(ctx.dc, "nodes") }, "Nodes"), " / ", name),
    heading(name),
    info,
    h("section", { id: "node-checks" }, h("h2", null, "Health checks"), checksBox),
    h("section", { id: "node-services" }, h("h2", null, "Service instances"), servicesBox),
    h("section", { id: "node-rtt" }, h("h2", null, "Round-trip times"), rttBox),
    h("section", { id: "node-sessions" }, h("h2", null, "Lock sessions"), sessionsBox));
  const enc = encodeURIComponent(name);
  const watches: Watch[] = [];
  const err = (e: ApiError) => ctx.showError(e);

  watches.push(watch<{ Node: CatalogNode; Services: AgentService[] } | null>(withQuery(`/v1/catalog/node-services/${enc}`, { dc: ctx.dc }), {
    onData: (body) => {
      ctx.showError(undefined);
      if (!body) {
        replace(info, h("p", { class: "empty" }, `There is no node "${name}" in ${ctx.dc}.`));
        replace(servicesBox);
        return;
      }
      replace(info, h("dl", { class: "meta" }, h("dt", null, "Address"), h("dd", null, h("code", null, body.Node.Address)), body.Node.ID ? [h("dt", null, "ID"), h("dd", null, body.Node.ID)] : null),
        h("h2", null, "Meta"), metaTable(body.Node.Meta));
      const services = body.Services ?? [];
      replace(servicesBox, services.length === 0 ? h("p", { class: "muted" }, "No service instances") : h("ul", { class: "plain" }, services.map((s) =>
        h("li", { "data-instance": s.ID }, h("a", { href: href(ctx.dc, "services", s.Service) }, s.Service), " ", h("span", { class: "muted" }, s.ID), " ",
          h("code", { class: "addr" }, `${s.Address || body.Node.Address}:${s.Port}`), " ", tagList(s.Tags)))));
    },
    onError: err,
  }));
  watches.push(watch<HealthCheck[]>(withQuery(`/v1/health/node/${enc}`, { dc: ctx.dc }), {
    onData: (body) => replace(checksBox, checkList(body ?? [])),
    onError: err,
  }));
  watches.push(watch<{ Node: string; Coord: Coord }[]>(withQuery("/v1/coordinate/nodes", { dc: ctx.dc }), {
    onData: (body) => {
      const all = body ?? [];
      const mine = all.find((c) => c.Node === name);
      if (!mine) {
        replace(rttBox, h("p", { class: "muted" }, "No network coordinate for this node yet (they arrive within a minute of joining)."));
        return;
      }
      const others = all.filter((c) => c.Node !== name).map((c) => ({ node: c.Node, ms: rttMs(mine.Coord, c.Coord) })).sort((a, b) => a.ms - b.ms);
      const fromAgent = others.find((o) => o.node === ctx.agentNode);
      if (others.length === 0) {
        replace(rttBox, h("p", { class: "muted" }, "This is the only node with a coordinate: nothing to measure against."));
        return;
      }
      const median = others[Math.floor(others.length / 2)]!.ms;
      replace(rttBox, h("dl", { class: "meta" },
        fromAgent ? [h("dt", null, `From ${ctx.agentNode} (this agent)`), h("dd", null, fmtMs(fromAgent.ms))] : null,
        h("dt", null, "Minimum"), h("dd", null, `${fmtMs(others[0]!.ms)} (${others[0]!.node})`),
        h("dt", null, "Median"), h("dd", null, fmtMs(median)),
        h("dt", null, "Maximum"), h("dd", null, `${fmtMs(others.at(-1)!.ms)} (${others.at(-1)!.node})`)));
    },
    onError: (e) => replace(rttBox, h("p", { class: "muted" }, `Round-trip times unavailable: ${e.message}`)),
  }));
  watches.push(watch<Session[]>(withQuery(`/v1/session/node/${enc}`, { dc: ctx.dc }), {
    onData: (body) => {
      const sessions = body ?? [];
      replace(sessionsBox, sessions.length === 0 ? h("p", { class: "muted" }, "No sessions") : h("ul", { class: "plain sessions" }, sessions.map((s) => {
        const li = h("li", { "data-session": s.ID });
        const invalidate = h("button", { type: "button", class: "danger" }, "Invalidate");
        invalidate.addEventListener("click", () => {
          askFirst(ctx, confirmBox, {
            question: `Invalidate session ${s.ID}? Locks it holds are released (or their keys deleted, behavior "${s.Behavior}"). `,
            yes: "Yes, invalidate",
            action: async () => {
              await api(withQuery(`/v1/session/destroy/${encodeURIComponent(s.ID)}`, { dc: ctx.dc }), { method: "PUT" });
              ctx.showError(undefined);
              replace(confirmBox);
            },
          });
        });
        const confirmBox = h("div", { class: "confirm", role: "group" });
        replace(li, h("code", null, s.ID), s.Name ? ` ${s.Name}` : "", h("span", { class: "muted" }, ` behavior ${s.Behavior}${s.TTL ? `, TTL ${s.TTL}` : ""}, lock delay ${Math.round(s.LockDelay / 1e9)} s `), invalidate, confirmBox);
        return li;
      })));
    },
    onError: err,
  }));
  ctx.onLeave(() => watches.forEach((w) => w.stop()));
}
