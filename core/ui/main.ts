// The web UI served at ui_config.content_path (core/http/ui.ts). One page,
// routes in the URL fragment: #/<dc>/services[/<name>], #/<dc>/nodes[/<name>],
// #/<dc>/kv/<prefix or key>, #/<dc>/kv-create/<prefix>, #/<dc>/acl/<tokens|policies|roles>[/<id>],
// #/<dc>/sync, #/<dc>/settings.
// Everything it shows comes from this agent's /v1 API.
import { api, ApiError, liveUpdates, setLiveUpdates, storedToken, storeToken } from "./api.ts";
import { h, replace } from "./dom.ts";
import { kvCreatePage, kvFolderPage, kvKeyPage } from "./kv.ts";
import { nodePage, nodesPage } from "./nodes.ts";
import { servicePage, servicesPage } from "./services.ts";
import { heading, type PageContext } from "./shared.ts";
import { syncPage } from "./sync.ts";
import { aclPage } from "./acl.ts";

interface AgentSelf {
  Config: { Datacenter: string; NodeName: string };
}

const errorBox = h("div", { id: "error", class: "error", role: "alert", hidden: true });
const main = h("main", { id: "main", tabindex: "-1" });
const dcPicker = h("select", { id: "dc", "aria-label": "Datacenter" });
const live = h("input", { type: "checkbox", id: "live", checked: liveUpdates() });
const nav = h("nav", { class: "top", "aria-label": "Sections" });

let agentDc = "";
let agentNode = "";
let leave: (() => void)[] = [];

function showError(err: ApiError | undefined): void {
  if (!err) {
    errorBox.hidden = true;
    replace(errorBox);
    return;
  }
  errorBox.hidden = false;
  replace(errorBox,
    h("strong", null, err.status ? `Error ${err.status}: ` : "Error: "), h("span", { class: "error-message" }, err.message),
    err.hint ? h("p", { class: "hint" }, err.hint) : null,
    h("button", { type: "button", class: "dismiss", "aria-label": "Dismiss error", onclick: () => showError(undefined) }, "×"));
}

function settingsPage(ctx: PageContext): void {
  const token = h("input", { type: "password", id: "token", autocomplete: "off", value: storedToken(), "aria-describedby": "token-help" });
  const saved = h("p", { "aria-live": "polite", class: "saved" });
  const form = h("form", { class: "settings" },
    h("label", { for: "token" }, "ACL token"), token,
    h("p", { id: "token-help", class: "muted" }, "Kept in this browser only (localStorage) and sent with every request as X-Consul-Token. Leave empty to use the agent's default token."),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "token-save" }, "Save"), h("button", { type: "button", id: "token-clear", onclick: () => { token.value = ""; storeToken(""); saved.textContent = "Token removed"; } }, "Remove token")),
    saved);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    storeToken(token.value.trim());
    saved.textContent = "Token saved";
  });
  replace(ctx.root, heading("Settings"), form);
}

function route(): void {
  for (const fn of leave) fn();
  leave = [];
  showError(undefined);
  const raw = location.hash.replace(/^#\/?/, "").split("?")[0]!;
  const parts = raw.split("/");
  const dc = decodeURIComponent(parts[0] || agentDc);
  const section = parts[1] ?? "";
  const rest = parts.slice(2).map((p) => decodeURIComponent(p)).join("/");
  if (!parts[0] || !section) {
    location.replace(`#/${encodeURIComponent(dc)}/services`);
    return;
  }
  // A datacenter typed into the URL that the agent does not list still shows as picked.
  if (!Array.from(dcPicker.options).some((o) => o.value === dc)) dcPicker.appendChild(h("option", { value: dc }, dc));
  if (dcPicker.value !== dc) dcPicker.value = dc;
  for (const a of Array.from(nav.querySelectorAll("a"))) {
    const on = a.dataset.section === section.replace(/^kv-create$/, "kv");
    a.setAttribute("href", `#/${encodeURIComponent(dc)}/${a.dataset.section}${a.dataset.section === "kv" ? "/" : a.dataset.section === "acl" ? "/tokens" : ""}`);
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const ctx: PageContext = { root: main, dc, agentNode, onLeave: (fn) => leave.push(fn), showError };
  if (section === "services") rest ? servicePage(ctx, rest) : servicesPage(ctx);
  else if (section === "nodes") rest ? nodePage(ctx, rest) : nodesPage(ctx);
  else if (section === "kv") rest === "" || rest.endsWith("/") ? kvFolderPage(ctx, rest) : kvKeyPage(ctx, rest);
  else if (section === "kv-create") kvCreatePage(ctx, rest);
  else if (section === "sync") syncPage(ctx);
  else if (section === "acl") aclPage(ctx, rest);
  else if (section === "settings") settingsPage(ctx);
  else replace(main, heading("Not found"), h("p", null, `There is no page "${section}". `, h("a", { href: `#/${encodeURIComponent(dc)}/services` }, "Go to the services")));
  document.title = `${main.querySelector("h1")?.textContent ?? "cairn"} - ${dc} - cairn`;
  // Moving to a page puts the keyboard at its heading, as a page load would.
  if (!document.activeElement || document.activeElement === document.body || !main.contains(document.activeElement)) {
    (main.querySelector("h1") as HTMLElement | null)?.focus({ preventScroll: true });
  }
}

async function start(): Promise<void> {
  const sections: [string, string][] = [["services", "Services"], ["nodes", "Nodes"], ["kv", "Key/Value"], ["acl", "ACLs"], ["sync", "Sync"], ["settings", "Settings"]];
  for (const [id, label] of sections) nav.appendChild(h("a", { "data-section": id, href: `#/` }, label));
  live.addEventListener("change", () => {
    setLiveUpdates(live.checked);
    route();
  });
  dcPicker.addEventListener("change", () => {
    const parts = location.hash.replace(/^#\/?/, "").split("/");
    location.hash = `#/${encodeURIComponent(dcPicker.value)}/${parts[1] || "services"}`;
  });
  document.body.replaceChildren(
    h("a", { class: "skip", href: "#main", onclick: (ev: Event) => { ev.preventDefault(); main.focus(); } }, "Skip to content"),
    h("header", null, h("span", { class: "brand" }, "cairn"), h("label", { class: "dc" }, "Datacenter ", dcPicker), nav,
      h("label", { class: "live", title: "Follow changes as they happen (blocking queries)" }, live, " Live updates")),
    errorBox, main);
  document.addEventListener("keydown", (ev) => {
    // "/" jumps to the page's search box, as on many sites.
    if (ev.key === "/" && !(ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement || ev.target instanceof HTMLSelectElement)) {
      const s = main.querySelector<HTMLInputElement>("input[type=search]");
      if (s) {
        ev.preventDefault();
        s.focus();
      }
    }
  });
  try {
    const self = await api<AgentSelf>("/v1/agent/self");
    agentDc = self.body.Config.Datacenter;
    agentNode = self.body.Config.NodeName;
  } catch (err) {
    // Without agent:read the token still lists datacenters; the first one is this agent's.
    if (!(err instanceof ApiError) || err.status !== 403) showError(err as ApiError);
  }
  try {
    const dcs = (await api<string[]>("/v1/catalog/datacenters")).body ?? [];
    if (!agentDc) agentDc = dcs[0] ?? "dc1";
    for (const dc of dcs.includes(agentDc) ? dcs : [agentDc, ...dcs]) dcPicker.appendChild(h("option", { value: dc }, dc));
  } catch (err) {
    dcPicker.appendChild(h("option", { value: agentDc || "dc1" }, agentDc || "dc1"));
    showError(err as ApiError);
  }
  window.addEventListener("hashchange", route);
  route();
}

void start();
