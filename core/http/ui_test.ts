import assert from "node:assert/strict";
import { test } from "node:test";
import { bodyText, testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";
import { uiContentPath } from "./ui.ts";
import { packUiFiles, type UiFile, unpackUiFiles } from "./ui_pack.ts";

const enc = (s: string) => new TextEncoder().encode(s);

function files(): Map<string, UiFile> {
  return new Map<string, UiFile>([
    ["index.html", { body: enc("<!doctype html><head><!--cairn-ui-settings--></head><body></body>"), type: "text/html; charset=utf-8" }],
    ["assets/ui.js", { body: enc("console.log(1)"), type: "text/javascript; charset=utf-8" }],
    ["assets/ui.css", { body: enc("body{}"), type: "text/css; charset=utf-8" }],
  ]);
}

function router(options: { contentPath?: string; files?: () => ReadonlyMap<string, UiFile> | undefined } = {}) {
  const r = createRoutes(testBackends({ ui: { contentPath: options.contentPath ?? "/ui/", files: options.files ?? (() => files()) } }));
  return (method: string, target: string) => r.handle(makeRequest(method, target));
}

test("ui pack: files come back as they went in, in order; a damaged blob is refused", () => {
  const packed = packUiFiles(files());
  const back = unpackUiFiles(packed);
  assert.deepEqual([...back.keys()], ["index.html", "assets/ui.js", "assets/ui.css"]);
  for (const [name, f] of files()) {
    assert.deepEqual(back.get(name)!.body, f.body, name);
    assert.equal(back.get(name)!.type, f.type);
  }
  assert.throws(() => unpackUiFiles(packed.subarray(0, packed.length - 3)), /runs past the end/);
  assert.throws(() => unpackUiFiles(new Uint8Array(2)), /shorter than its header/);
});

test("ui content path: Consul's UIPathBuilder (one slash each side)", () => {
  assert.equal(uiContentPath("/ui/"), "/ui/");
  assert.equal(uiContentPath("ui"), "/ui/");
  assert.equal(uiContentPath("/consul/ui"), "/consul/ui/");
  assert.equal(uiContentPath(""), "/ui/");
});

test("ui: index.html with the content path as its base, assets with their types, every other path the page", async () => {
  const get = router();
  const index = await get("GET", "/ui/");
  assert.equal(index.status, 200);
  assert.equal(index.headers["Content-Type"], "text/html; charset=utf-8");
  assert.match(bodyText(index), /<base href="\/ui\/"><script id="cairn-ui-settings" type="application\/json">\{"contentPath":"\/ui\/"\}<\/script>/);
  assert.match(index.headers["Content-Security-Policy"]!, /default-src 'self'/);
  const js = await get("GET", "/ui/assets/ui.js");
  assert.equal(js.status, 200);
  assert.equal(js.headers["Content-Type"], "text/javascript; charset=utf-8");
  assert.equal(bodyText(js), "console.log(1)");
  // The UI's own routes are in the fragment, but a deep link to a path still gets the page.
  assert.equal(bodyText(await get("GET", "/ui/dc1/services")), bodyText(index));
  const missing = await get("GET", "/ui/assets/nope.js");
  assert.equal(missing.status, 404);
  assert.match(bodyText(missing), /no file "assets\/nope.js"/);
  // Go's ServeMux: a subtree without its slash redirects, the catch-all "/" notwithstanding.
  assert.equal((await get("GET", "/ui")).headers.Location, "/ui/");
  assert.equal((await get("GET", "/v1/kv?dc=dc1")).headers.Location, "/v1/kv/?dc=dc1");
  assert.equal((await get("PUT", "/ui/")).status, 405);
});

test("ui: / redirects to the content path, query kept; without the UI, / is a 404 and /ui/ is not served", async () => {
  const get = router({ contentPath: "console" });
  const r = await get("GET", "/?dc=dc2");
  assert.equal(r.status, 301);
  assert.equal(r.headers.Location, "/console/?dc=dc2");
  assert.equal((await get("GET", "/console/")).status, 200);
  const off = createRoutes(testBackends());
  assert.equal((await off.handle(makeRequest("GET", "/"))).status, 404);
  assert.equal((await off.handle(makeRequest("GET", "/ui/"))).status, 404);
  // The API is untouched by the UI's routes ("/" is the router's catch-all: other paths still 404, whatever the method).
  for (const method of ["GET", "PUT", "DELETE"]) {
    const nope = await get(method, "/v1/nope");
    assert.equal(nope.status, 404, method);
    assert.equal(bodyText(nope), 'Not found: no endpoint for "/v1/nope"');
  }
  assert.equal((await get("PUT", "/")).status, 405);
});

test("ui: the files are loaded on the first request for the UI, not before; a build without them says so", async () => {
  let loads = 0;
  const get = router({ files: () => { loads++; return files(); } });
  assert.equal(loads, 0);
  await get("GET", "/v1/status/leader");
  assert.equal(loads, 0);
  await get("GET", "/ui/");
  assert.equal(loads, 1);
  const none = router({ files: () => undefined });
  const r = await none("GET", "/ui/");
  assert.equal(r.status, 404);
  assert.match(bodyText(r), /not in this build/);
});
