// The key/value browser and editor: folders (keys up to the next "/"),
// search within a folder, create, edit (JSON checked and formatted, values
// that are not UTF-8 text shown and written as base64), delete, recursive
// delete of a folder after confirming how many keys go, and which session
// holds a key's lock.
import { api, ApiError, base64ToBytes, decodeBase64, isText, kvPath, watch, withQuery } from "./api.ts";
import { h, replace, VirtualList } from "./dom.ts";
import { askFirst, heading, href, type PageContext, type Session } from "./shared.ts";

interface KvEntry {
  Key: string;
  Value: string | null;
  Flags: number;
  Session?: string;
  LockIndex: number;
  CreateIndex: number;
  ModifyIndex: number;
}

function crumbs(ctx: PageContext, key: string): HTMLElement {
  const parts = key.split("/");
  const links: (HTMLElement | string)[] = [h("a", { href: href(ctx.dc, "kv", "") }, "Key/Value")];
  let prefix = "";
  for (let i = 0; i < parts.length - 1; i++) {
    prefix += `${parts[i]}/`;
    links.push(" / ", h("a", { href: href(ctx.dc, "kv", prefix) }, parts[i]!));
  }
  if (parts.at(-1)) links.push(" / ", parts.at(-1)!);
  return h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, links);
}

/** "Valid JSON" / "Not JSON: …" for text that looks like JSON; null for text that does not try to be. */
export function jsonStatus(text: string): { valid: boolean; message: string } | null {
  const t = text.trim();
  if (!/^[[{"]/.test(t)) return null;
  try {
    JSON.parse(t);
    return { valid: true, message: "Valid JSON" };
  } catch (err) {
    return { valid: false, message: `Not valid JSON: ${(err as Error).message}` };
  }
}

export function kvFolderPage(ctx: PageContext, prefix: string): void {
  const search = h("input", { type: "search", id: "kv-search", placeholder: "Search in this folder…", "aria-label": "Search keys in this folder" });
  const summary = h("p", { class: "summary", "aria-live": "polite" }, "Loading…");
  const actions = h("div", { class: "actions" }, h("a", { class: "button", id: "kv-create", href: href(ctx.dc, "kv-create", prefix) }, "Create"));
  const confirmBox = h("div", { class: "confirm", role: "group" });
  if (prefix !== "") {
    const del = h("button", { type: "button", class: "danger", id: "kv-delete-folder" }, "Delete folder");
    del.addEventListener("click", async () => {
      try {
        const r = await api<string[] | null>(withQuery(kvPath(prefix), { keys: true, dc: ctx.dc }), { notFoundOk: true });
        const n = r.body?.length ?? 0;
        askFirst(ctx, confirmBox, {
          question: `Delete "${prefix}" and the ${n} key${n === 1 ? "" : "s"} under it? This cannot be undone. `,
          yes: "Yes, delete them",
          attrs: { id: "kv-confirm-delete" },
          action: async () => {
            await api(withQuery(kvPath(prefix), { recurse: true, dc: ctx.dc }), { method: "DELETE" });
            const parent = prefix.slice(0, -1).includes("/") ? prefix.slice(0, prefix.slice(0, -1).lastIndexOf("/") + 1) : "";
            location.hash = href(ctx.dc, "kv", parent);
          },
        });
      } catch (e) {
        ctx.showError(e as ApiError);
      }
    });
    actions.appendChild(del);
  }
  const list = new VirtualList<string>({
    rowHeight: 36,
    label: "Keys",
    render: (key) => {
      const name = key.slice(prefix.length);
      return h("div", { class: "row", "data-key": key }, h("a", { href: href(ctx.dc, "kv", key), class: key.endsWith("/") ? "name folder" : "name" }, name));
    },
  });
  replace(ctx.root, crumbs(ctx, prefix), heading(prefix === "" ? "Key/Value" : prefix, summary), h("div", { class: "filters" }, search, actions), confirmBox, list.element);
  let keys: string[] = [];
  const draw = () => {
    const q = search.value.toLowerCase();
    // The folder itself ("a/" under "a/") is not a child of itself.
    const shown = keys.filter((k) => k !== prefix && (!q || k.slice(prefix.length).toLowerCase().includes(q)));
    list.items = shown;
    summary.textContent = shown.length === 0 && keys.length <= 1 ? "Nothing here yet: create a key." : `${shown.length} item${shown.length === 1 ? "" : "s"}`;
  };
  search.addEventListener("input", draw);
  const w = watch<string[] | null>(withQuery(kvPath(prefix), { keys: true, separator: "/", dc: ctx.dc }), {
    onData: (body) => {
      ctx.showError(undefined);
      keys = (body ?? []).sort();
      draw();
    },
    onError: (e) => ctx.showError(e),
  });
  ctx.onLeave(() => w.stop());
}

/** The value editor shared by create and edit: text or base64, JSON check and formatting. */
function valueEditor(initial: { text: string; base64: boolean }): { element: HTMLElement; bytes(): Uint8Array | string } {
  const area = h("textarea", { id: "kv-value", rows: 12, spellcheck: "false", "aria-label": "Value", value: initial.text });
  const b64 = h("input", { type: "checkbox", id: "kv-base64", checked: initial.base64 });
  const jsonNote = h("span", { class: "json-status", id: "kv-json-status", "aria-live": "polite" });
  const format = h("button", { type: "button", id: "kv-format" }, "Format JSON");
  const update = () => {
    const s = b64.checked ? null : jsonStatus(area.value);
    jsonNote.textContent = s?.message ?? "";
    jsonNote.className = `json-status ${s ? (s.valid ? "ok" : "bad") : ""}`;
    format.disabled = !s?.valid;
  };
  format.addEventListener("click", () => {
    area.value = JSON.stringify(JSON.parse(area.value), null, 2);
    update();
  });
  b64.addEventListener("change", () => {
    // Switching shows the same bytes the other way, when they are text.
    try {
      if (b64.checked) area.value = btoa(String.fromCharCode(...new TextEncoder().encode(area.value)));
      else if (isText(area.value.trim())) area.value = decodeBase64(area.value.trim());
      else b64.checked = true;
    } catch {
      b64.checked = true;
    }
    update();
  });
  area.addEventListener("input", update);
  update();
  return {
    element: h("div", { class: "editor" }, h("label", { for: "kv-value" }, "Value"), area,
      h("div", { class: "editor-bar" }, h("label", null, b64, " Value is base64"), format, jsonNote)),
    bytes: () => {
      if (!b64.checked) return area.value;
      try {
        return base64ToBytes(area.value.replace(/\s+/g, ""));
      } catch {
        throw new ApiError(400, "The value is not valid base64", "Uncheck \"Value is base64\" to store it as text.");
      }
    },
  };
}

export function kvCreatePage(ctx: PageContext, prefix: string): void {
  const name = h("input", { type: "text", id: "kv-key", required: true, "aria-describedby": "kv-key-help", autocomplete: "off" });
  const editor = valueEditor({ text: "", base64: false });
  const save = h("button", { type: "submit", id: "kv-save" }, "Save");
  const form = h("form", { class: "kv-form" },
    h("label", { for: "kv-key" }, "Key"),
    h("div", { class: "key-input" }, h("span", { class: "muted" }, prefix), name),
    h("p", { id: "kv-key-help", class: "muted" }, "End with / to create a folder."),
    editor.element, h("div", { class: "actions" }, save, h("a", { class: "button", href: href(ctx.dc, "kv", prefix) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const key = prefix + name.value;
    if (name.value === "") return;
    try {
      const body = key.endsWith("/") ? "" : editor.bytes();
      // cas=0: only if the key does not exist yet.
      const r = await api<boolean>(withQuery(kvPath(key), { cas: 0, dc: ctx.dc }), { method: "PUT", body });
      if (r.body !== true) throw new ApiError(409, `Key "${key}" already exists`, "Open it from its folder to edit it, or pick another name.");
      ctx.showError(undefined);
      location.hash = href(ctx.dc, "kv", key.endsWith("/") ? key : prefix);
    } catch (e) {
      ctx.showError(e as ApiError);
    }
  });
  replace(ctx.root, crumbs(ctx, prefix), heading("Create a key"), form);
  name.focus();
}

export function kvKeyPage(ctx: PageContext, key: string): void {
  const body = h("div", null, h("p", null, "Loading…"));
  replace(ctx.root, crumbs(ctx, key), heading(key), body);
  const parent = key.includes("/") ? key.slice(0, key.lastIndexOf("/") + 1) : "";
  void (async () => {
    let entry: KvEntry | undefined;
    try {
      const r = await api<KvEntry[] | null>(withQuery(kvPath(key), { dc: ctx.dc }), { notFoundOk: true });
      entry = r.body?.[0];
    } catch (e) {
      ctx.showError(e as ApiError);
      replace(body);
      return;
    }
    if (!entry) {
      replace(body, h("p", { class: "empty" }, `There is no key "${key}" (it may have been deleted). `, h("a", { href: href(ctx.dc, "kv", parent) }, "Back to the folder")));
      return;
    }
    const value = entry.Value ?? "";
    const text = value === "" || isText(value);
    const editor = valueEditor({ text: text ? (value === "" ? "" : decodeBase64(value)) : value, base64: !text });
    const lock = h("div", { class: "lock", id: "kv-lock" });
    if (entry.Session) {
      replace(lock, "Locked by session ", h("code", null, entry.Session));
      api<Session[] | null>(withQuery(`/v1/session/info/${encodeURIComponent(entry.Session)}`, { dc: ctx.dc }), { notFoundOk: true }).then((r) => {
        const s = r.body?.[0];
        if (s) lock.append(" held by node ", h("a", { href: href(ctx.dc, "nodes", s.Node) }, s.Node), s.Name ? ` (${s.Name})` : "");
      }, () => {});
    }
    const modifyIndex = entry.ModifyIndex;
    const status = h("p", { class: "saved", "aria-live": "polite" });
    const confirmBox = h("div", { class: "confirm", role: "group" });
    const del = h("button", { type: "button", class: "danger", id: "kv-delete" }, "Delete");
    del.addEventListener("click", () => {
      askFirst(ctx, confirmBox, {
        question: `Delete "${key}"? `,
        yes: "Yes, delete",
        attrs: { id: "kv-confirm-delete" },
        action: async () => {
          await api(withQuery(kvPath(key), { dc: ctx.dc }), { method: "DELETE" });
          location.hash = href(ctx.dc, "kv", parent);
        },
      });
    });
    let cas = modifyIndex;
    const form = h("form", { class: "kv-form" }, editor.element,
      h("div", { class: "actions" }, h("button", { type: "submit", id: "kv-save" }, "Save"), del), status, confirmBox);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        // ?cas: refuse to overwrite a change someone made since this page read the key.
        const r = await api<boolean>(withQuery(kvPath(key), { cas, flags: entry.Flags || undefined, dc: ctx.dc }), { method: "PUT", body: editor.bytes() });
        if (r.body !== true) throw new ApiError(409, `"${key}" was changed by someone else since you opened it`, "Reload the page to see the current value, then edit again.");
        const after = await api<KvEntry[] | null>(withQuery(kvPath(key), { dc: ctx.dc }), { notFoundOk: true });
        cas = after.body?.[0]?.ModifyIndex ?? cas;
        ctx.showError(undefined);
        status.textContent = "Saved";
      } catch (e) {
        ctx.showError(e as ApiError);
      }
    });
    replace(body, lock, h("p", { class: "muted" }, `Flags ${entry.Flags}, created at index ${entry.CreateIndex}, modified at ${entry.ModifyIndex}, lock index ${entry.LockIndex}`), form);
  })();
}
