// The web UI's part of `npm run build`: esbuild bundles core/ui/main.ts for
// the browser (no framework: the DOM and a small helper, core/ui/dom.ts),
// and the page, its stylesheet and the script go into one blob
// (core/http/ui_pack.ts), raw DEFLATE, which build.ts adds to the
// executable as the asset "cairn-ui". Nothing is fetched at run time.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { deflateRawSync } from "node:zlib";
import { build } from "esbuild";
import { packUiFiles, type UiFile } from "../core/http/ui_pack.ts";

/** The UI's files, packed (not yet deflated). */
export async function buildUiFiles(root: string): Promise<Map<string, UiFile>> {
  const dir = join(root, "core/ui");
  const out = await build({
    entryPoints: [join(dir, "main.ts")],
    bundle: true,
    platform: "browser",
    format: "iife",
    target: ["chrome110", "firefox115", "safari16"],
    minify: true,
    write: false,
    legalComments: "none",
    logLevel: "warning",
  });
  const js = out.outputFiles[0]!.contents;
  return new Map<string, UiFile>([
    ["index.html", { body: readFileSync(join(dir, "index.html")), type: "text/html; charset=utf-8" }],
    ["assets/ui.css", { body: readFileSync(join(dir, "ui.css")), type: "text/css; charset=utf-8" }],
    ["assets/ui.js", { body: js, type: "text/javascript; charset=utf-8" }],
  ]);
}

/** The asset build.ts puts in the executable. */
export async function buildUiAsset(root: string): Promise<Buffer> {
  return deflateRawSync(packUiFiles(await buildUiFiles(root)), { level: 9 });
}
