// ACL tokens, policies and roles (Consul's /v1/acl API): lists, a policy's
// rules, creating a policy, deleting a token, policy or role after
// confirming. What the user may see and do is what their token (Settings)
// allows; with ACLs off the agent answers 401 and the page says so.
import { api, type ApiError, watch, withQuery } from "./api.ts";
import { h, replace } from "./dom.ts";
import { askFirst, heading, href, type PageContext } from "./shared.ts";

interface Link {
  ID: string;
  Name: string;
}

interface Token {
  AccessorID: string;
  Description: string;
  Policies?: Link[] | null;
  Roles?: Link[] | null;
  Local: boolean;
  CreateTime?: string;
}

interface Policy {
  ID: string;
  Name: string;
  Description: string;
  Rules?: string;
  Datacenters?: string[] | null;
}

interface Role {
  ID: string;
  Name: string;
  Description: string;
  Policies?: Link[] | null;
}

type Kind = "tokens" | "policies" | "roles";

function tabs(ctx: PageContext, current: Kind): HTMLElement {
  const tab = (k: Kind, label: string) => h("a", { href: href(ctx.dc, "acl", k), "aria-current": k === current ? "page" : false }, label);
  return h("nav", { class: "tabs", "aria-label": "ACL sections" }, tab("tokens", "Tokens"), " ", tab("policies", "Policies"), " ", tab("roles", "Roles"));
}

function links(items: Link[] | null | undefined, ctx: PageContext, kind: Kind): (HTMLElement | string)[] {
  const out: (HTMLElement | string)[] = [];
  for (const l of items ?? []) {
    if (out.length) out.push(", ");
    out.push(kind === "policies" ? h("a", { href: href(ctx.dc, "acl", "policies", l.ID) }, l.Name) : l.Name);
  }
  return out;
}

/** A delete button that asks first, then calls DELETE on `path`. */
function deleteButton(ctx: PageContext, what: string, path: string, id: string): HTMLElement {
  const box = h("span", { class: "confirm", role: "group" });
  const button = h("button", { type: "button", class: "danger", "data-delete": id }, "Delete");
  button.addEventListener("click", () => {
    askFirst(ctx, box, {
      question: `Delete ${what}? `,
      yes: "Yes, delete",
      attrs: { "data-confirm": id },
      action: async () => {
        await api(withQuery(path, { dc: ctx.dc }), { method: "DELETE" });
        ctx.showError(undefined);
        replace(box);
      },
    });
  });
  return h("span", null, button, box);
}

export function aclPage(ctx: PageContext, rest: string): void {
  const [kind = "tokens", id] = rest.split("/") as [Kind | undefined, string | undefined];
  if (kind === "policies" && id) return policyPage(ctx, id);
  const body = h("div", null, h("p", null, "Loading…"));
  const title = kind === "policies" ? "ACL policies" : kind === "roles" ? "ACL roles" : "ACL tokens";
  const extra = kind === "policies" ? createPolicyForm(ctx) : null;
  replace(ctx.root, heading(title), tabs(ctx, kind), extra, body);
  const path = kind === "policies" ? "/v1/acl/policies" : kind === "roles" ? "/v1/acl/roles" : "/v1/acl/tokens";
  const w = watch<unknown[] | null>(withQuery(path, { dc: ctx.dc }), {
    onData: (items) => {
      ctx.showError(undefined);
      const list = items ?? [];
      if (list.length === 0) {
        replace(body, h("p", { class: "empty" }, `No ${kind} that your token may read.`));
        return;
      }
      if (kind === "tokens") {
        replace(body, h("ul", { class: "plain acl" }, (list as Token[]).map((t) =>
          h("li", { class: "card", "data-token": t.AccessorID },
            h("div", { class: "card-head" }, h("strong", null, t.Description || "(no description)"), h("code", { class: "muted" }, t.AccessorID), t.Local ? h("span", { class: "tag" }, "local") : null),
            t.Policies?.length ? h("p", null, "Policies: ", links(t.Policies, ctx, "policies")) : null,
            t.Roles?.length ? h("p", null, "Roles: ", links(t.Roles, ctx, "roles")) : null,
            deleteButton(ctx, `token "${t.Description || t.AccessorID}"`, `/v1/acl/token/${encodeURIComponent(t.AccessorID)}`, t.AccessorID)))));
      } else if (kind === "policies") {
        replace(body, h("ul", { class: "plain acl" }, (list as Policy[]).map((p) =>
          h("li", { class: "card", "data-policy": p.Name },
            h("div", { class: "card-head" }, h("a", { href: href(ctx.dc, "acl", "policies", p.ID) }, h("strong", null, p.Name)), h("span", { class: "muted" }, p.Description)),
            p.ID.startsWith("00000000-0000-0000-0000-") ? h("span", { class: "muted" }, "built in") : deleteButton(ctx, `policy "${p.Name}"`, `/v1/acl/policy/${encodeURIComponent(p.ID)}`, p.ID)))));
      } else {
        replace(body, h("ul", { class: "plain acl" }, (list as Role[]).map((r) =>
          h("li", { class: "card", "data-role": r.Name },
            h("div", { class: "card-head" }, h("strong", null, r.Name), h("span", { class: "muted" }, r.Description)),
            r.Policies?.length ? h("p", null, "Policies: ", links(r.Policies, ctx, "policies")) : null,
            deleteButton(ctx, `role "${r.Name}"`, `/v1/acl/role/${encodeURIComponent(r.ID)}`, r.ID)))));
      }
    },
    onError: (e) => {
      replace(body);
      ctx.showError(e);
    },
  });
  ctx.onLeave(() => w.stop());
}

function createPolicyForm(ctx: PageContext): HTMLElement {
  const name = h("input", { type: "text", id: "policy-name", required: true, autocomplete: "off" });
  const description = h("input", { type: "text", id: "policy-description", autocomplete: "off" });
  const rules = h("textarea", { id: "policy-rules", rows: 5, spellcheck: "false", placeholder: 'key_prefix "app/" { policy = "read" }' });
  const form = h("form", { class: "kv-form" },
    h("label", { for: "policy-name" }, "Name"), name,
    h("label", { for: "policy-description" }, "Description"), description,
    h("label", { for: "policy-rules" }, "Rules (HCL or JSON)"), rules,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "policy-create" }, "Create policy")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api(withQuery("/v1/acl/policy", { dc: ctx.dc }), { method: "PUT", body: JSON.stringify({ Name: name.value, Description: description.value, Rules: rules.value }) });
      ctx.showError(undefined);
      name.value = description.value = rules.value = "";
    } catch (e) {
      ctx.showError(e as ApiError);
    }
  });
  return h("details", { class: "create" }, h("summary", null, "Create a policy"), form);
}

function policyPage(ctx: PageContext, id: string): void {
  const body = h("div", null, h("p", null, "Loading…"));
  replace(ctx.root, h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: href(ctx.dc, "acl", "policies") }, "ACL policies"), " / ", id), heading("Policy"), body);
  void api<Policy>(withQuery(`/v1/acl/policy/${encodeURIComponent(id)}`, { dc: ctx.dc })).then((r) => {
    const p = r.body;
    const head = ctx.root.querySelector("h1");
    if (head) head.textContent = p.Name;
    replace(body, h("p", { class: "muted" }, p.Description), h("dl", { class: "meta" }, h("dt", null, "ID"), h("dd", null, h("code", null, p.ID)), h("dt", null, "Datacenters"), h("dd", null, p.Datacenters?.length ? p.Datacenters.join(", ") : "all")),
      h("h2", null, "Rules"), h("pre", { class: "output", id: "policy-rules-view" }, p.Rules || "(none)"));
  }, (e) => {
    replace(body);
    ctx.showError(e as ApiError);
  });
}
