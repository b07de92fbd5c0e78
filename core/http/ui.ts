// The web UI's routes (Consul's agent/http.go: `/ui/` and the `/` redirect,
// registered when ui_config.enabled). The files come from the UI blob built
// into the executable (ui_pack.ts); the agent hands over a function that
// loads them on the first request, so an agent nobody browses never holds
// them (docs/performance.md). Routing inside the UI is in the URL's
// fragment (#/dc1/services), so every path under content_path that is not a
// file answers index.html, as Consul's UI server does.
import { textResponse, type Handler, type HttpResponse } from "./types.ts";
import type { UiFile } from "./ui_pack.ts";

export interface UiBackend {
  /** ui_config.content_path as configured ("ui", "/ui", "/ui/" all mean "/ui/"). */
  contentPath: string;
  /** The UI's files by name ("index.html", "assets/ui.js"); undefined when this build has none. Called per request: memoise. */
  files: () => ReadonlyMap<string, UiFile> | undefined;
}

/** Consul's UIPathBuilder: one "/" on each side. */
export function uiContentPath(configured: string): string {
  const trimmed = configured.replace(/^\/+|\/+$/g, "");
  return trimmed === "" ? "/ui/" : `/${trimmed}/`;
}

/** Where index.html puts the agent's settings for the UI (the content path). */
const SETTINGS_MARKER = "<!--cairn-ui-settings-->";

// The UI loads nothing from elsewhere and talks only to this agent.
const securityHeaders = {
  "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

function escapeHtmlAttr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** GET <content_path>*: a file of the UI, or index.html for any other path (the UI's own routes). */
export function uiHandler(ui: UiBackend): Handler {
  const base = uiContentPath(ui.contentPath);
  let index: string | undefined;
  return async (req): Promise<HttpResponse> => {
    const files = ui.files();
    if (!files) {
      return textResponse(404, "The web UI is not in this build of cairn: build the executable with `npm run build` (the UI is bundled into it)");
    }
    const rest = req.path.startsWith(base) ? req.path.slice(base.length) : "";
    const file = rest === "" || rest === "index.html" ? undefined : files.get(rest);
    if (file) {
      return { status: 200, headers: { "Content-Type": file.type, "Cache-Control": "no-cache", ...securityHeaders }, body: file.body };
    }
    if (rest.startsWith("assets/")) return textResponse(404, `Not found: the web UI has no file "${rest}"`);
    if (index === undefined) {
      const page = files.get("index.html");
      if (!page) return textResponse(500, "The web UI in this build is damaged: it has no index.html");
      const settings = JSON.stringify({ contentPath: base }).replace(/</g, "\\u003c");
      index = new TextDecoder().decode(page.body).replace(
        SETTINGS_MARKER,
        `<base href="${escapeHtmlAttr(base)}"><script id="cairn-ui-settings" type="application/json">${settings}</script>`,
      );
    }
    return { status: 200, headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache", ...securityHeaders }, body: index };
  };
}

/**
 * The methods the "/" route takes: all, because a route "/" is the router's
 * catch-all (as in Go's ServeMux); every path but "/" itself still answers
 * the router's own 404, whatever the method.
 */
export const uiRootMethods = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH"] as const;

/** GET /: 301 to the UI (Consul redirects "/" to "/ui/" when the UI is on; otherwise "/" is a 404). */
export function uiRootRedirectHandler(ui: UiBackend): Handler {
  const base = uiContentPath(ui.contentPath);
  return async (req) => {
    if (req.path !== "/") return textResponse(404, `Not found: no endpoint for "${req.path}"`);
    if (req.method !== "GET" && req.method !== "HEAD") return textResponse(405, `method ${req.method} not allowed`, { Allow: "OPTIONS,GET" });
    const query = req.query.toString();
    const location = query ? `${base}?${query}` : base;
    return textResponse(301, `Moved Permanently: use "${location}"`, { Location: location });
  };
}
