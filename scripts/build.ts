// npm run build: esbuild bundles cli/main.ts into one CommonJS file, Node's
// single-executable support turns it into a preparation blob, and postject
// injects the blob into a copy of this node binary: dist/cairn. The blob's
// main script is scripts/sea_main.cjs, which runs the bundle with a V8 code
// cache recorded by a first build of the executable (scripts/code_cache.ts
// starts a few agents on 127.0.0.1 for that; build times in docs/performance.md). Offline.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { deflateRawSync } from "node:zlib";
import { join, resolve } from "node:path";
import { build, type Plugin } from "esbuild";
import { trainCodeCache } from "./code_cache.ts";
import { buildUiAsset } from "./build_ui.ts";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..");
// CAIRN_DIST_DIR builds elsewhere (several engineers sharing one checkout
// each build their own binary and point CAIRN_E2E_BIN at it).
const dist = process.env.CAIRN_DIST_DIR ? resolve(process.env.CAIRN_DIST_DIR) : join(root, "dist");
const bundle = join(dist, "cairn.cjs");
const blob = join(dist, "cairn.blob");
const exe = join(dist, "cairn");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };

/** The HEAD commit's date in UTC, as Consul's BuildDate (the commit's, so a rebuild gives the same binary facts). */
function gitCommitDate(): string {
  try {
    const secs = Number(execFileSync("git", ["log", "-1", "--format=%ct", "HEAD"], { cwd: root, stdio: ["ignore", "pipe", "ignore"] }).toString().trim());
    return Number.isFinite(secs) && secs > 0 ? new Date(secs * 1000).toISOString().replace(/\.\d{3}Z$/, "Z") : "";
  } catch {
    return "";
  }
}

function gitRevision(): string {
  try {
    return execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: root, stdio: ["ignore", "pipe", "ignore"] })
      .toString().trim();
  } catch {
    return "";
  }
}

/**
 * The executable's first bundle leaves out what cli/run.ts imports dynamically (the commands an
 * agent never runs, through lazyCommand): each such import becomes a module that says so if it is
 * ever run. The executable's second bundle is the whole CLI, and the first hands those commands
 * over to it (scripts/sea_main.cjs).
 */
const leaveOutLazyCommands: Plugin = {
  name: "leave-out-lazy-commands",
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) =>
      args.kind === "dynamic-import" && args.importer === join(root, "cli/run.ts") ? { path: args.path, namespace: "second-bundle" } : undefined);
    b.onLoad({ filter: /.*/, namespace: "second-bundle" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is in the executable's second bundle, which did not take over`)});`,
      loader: "js",
    }));
  },
};

/** Bundle cli/main.ts into `outfile` (one CommonJS file); the text, checked to be Latin-1. */
async function bundleCli(outfile: string, plugins: Plugin[]): Promise<string> {
  await build({
    entryPoints: [join(root, "cli/main.ts")],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    outfile,
    legalComments: "none",
    // Whitespace and comments out: the SEA keeps the whole source as one heap
    // string for the life of the process (V8 compiles functions lazily from
    // it), so every byte here is resident in every agent. Names are kept, so
    // stack traces still say which function failed.
    minifyWhitespace: true,
    logLevel: "warning",
    plugins,
    define: {
      CAIRN_VERSION: JSON.stringify(pkg.version),
      CAIRN_REVISION: JSON.stringify(gitRevision()),
      CAIRN_BUILD_DATE: JSON.stringify(gitCommitDate()),
    },
  });
  // One character above U+00FF anywhere in the bundle makes V8 store the whole
  // source as a two-byte string: twice the resident heap in every agent.
  // esbuild escapes string literals but not regular expression literals.
  const text = readFileSync(outfile, "utf8");
  const wide = /[^\u0000-\u00ff]/.exec(text);
  if (wide) {
    const at = text.slice(Math.max(0, wide.index - 40), wide.index + 40);
    throw new Error(`Bundle contains ${JSON.stringify(wide[0])} (above U+00FF) near ${JSON.stringify(at)}: write it as a \\u escape in the source`);
  }
  return text;
}

/** A bundle as the executable's asset: Latin-1, wrapped as a CommonJS function, raw DEFLATE. */
function bundleAsset(text: string, file: string): string {
  writeFileSync(file, deflateRawSync(Buffer.from(`(function (exports, require, module, __filename, __dirname) {${text}\n})`, "latin1"), { level: 9 }));
  return file;
}

mkdirSync(dist, { recursive: true });
// CAIRN_BUILD_SPLIT=0: one bundle, the whole CLI (as before the split; for comparing).
const split = process.env.CAIRN_BUILD_SPLIT !== "0";
// dist/cairn.cjs is the whole CLI either way (`node dist/cairn.cjs` runs every command).
const wholeText = await bundleCli(bundle, []);
const bundleText = split ? await bundleCli(join(dist, "cairn-agent.cjs"), [leaveOutLazyCommands]) : wholeText;
const fullText = split ? wholeText : undefined;

// The executable's main script is scripts/sea_main.cjs; the bundle goes in as
// an asset, in Latin-1 and already wrapped as a CommonJS function (so that
// the build's training run and every agent compile the very same text), and
// then V8's code cache for it, recorded by a first executable (see
// scripts/code_cache.ts and sea_main.cjs). CAIRN_BUILD_CODE_CACHE=0 skips it.
// Both assets go in deflated (raw DEFLATE; sea_main.cjs inflates them): an
// asset is read through the executable's mapping, so every page of it that
// the start touches stays in each agent's RSS for the agent's whole life,
// although the text is then copied into the heap and the cache deserialised.
// Deflated, that is much less (docs/performance.md).
const source = bundleAsset(bundleText, join(dist, "cairn.sea.js"));
const fullSource = fullText === undefined ? undefined : bundleAsset(fullText, join(dist, "cairn-full.sea.js"));
const full: Record<string, string> = fullSource === undefined ? {} : { "cairn-full.js": fullSource };
// The web UI (scripts/build_ui.ts): read by an agent only when someone opens /ui/.
const uiAsset = join(dist, "cairn-ui.z");
writeFileSync(uiAsset, await buildUiAsset(root));
const codeCache = join(dist, "cairn.codecache");
const codeCacheDeflated = join(dist, "cairn.codecache.z");
const fullCodeCache = join(dist, "cairn-full.codecache");
const fullCodeCacheDeflated = join(dist, "cairn-full.codecache.z");

async function makeExecutable(assets: Record<string, string>): Promise<void> {
  const seaConfig = join(dist, "sea-config.json");
  writeFileSync(seaConfig, JSON.stringify({
    main: join(root, "scripts/sea_main.cjs"),
    output: blob,
    disableExperimentalSEAWarning: true,
    useSnapshot: false,
    useCodeCache: false,
    assets,
  }));
  execFileSync(process.execPath, ["--experimental-sea-config", seaConfig], { stdio: ["ignore", "ignore", "inherit"] });
  // postject rewrites the executable with one 99 MB write, which leaves it in
  // the page cache as large folios; every process mapping it then faults in
  // whole folios, more RSS per agent (docs/performance.md) than the same file read back
  // from disk (or copied) gives, until the cache is dropped. So the blob goes
  // into a scratch copy, and dist/cairn is a kernel copy of that.
  const injected = join(dist, "cairn.injecting");
  rmSync(exe, { force: true });
  copyFileSync(process.execPath, injected);
  const require = createRequire(import.meta.url);
  const { inject } = require("postject") as {
    inject: (file: string, name: string, data: Buffer, options: { sentinelFuse: string }) => Promise<void>;
  };
  await inject(injected, "NODE_SEA_BLOB", readFileSync(blob), {
    sentinelFuse: "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2",
  });
  copyFileSync(injected, exe);
  chmodSync(exe, 0o755);
  rmSync(injected, { force: true });
  rmSync(blob, { force: true });
  rmSync(seaConfig, { force: true });
}

await makeExecutable({ "cairn.js": source, "cairn-ui": uiAsset, ...full });
if (process.env.CAIRN_BUILD_CODE_CACHE !== "0") {
  await trainCodeCache({ bin: exe, out: codeCache });
  writeFileSync(codeCacheDeflated, deflateRawSync(readFileSync(codeCache), { level: 9 }));
  // The second bundle's cache: from one lazy command run to its end (a snapshot save that finds no
  // agent: flags, the download's connect, the error), written by sea_main.cjs as the process exits.
  const fullCache: Record<string, string> = {};
  if (fullSource !== undefined) {
    rmSync(fullCodeCache, { force: true });
    spawnSync(exe, ["snapshot", "save", "-http-addr=127.0.0.1:1", join(dist, "no-such-dir", "x.snap")], { env: { ...process.env, NODE_OPTIONS: "", CAIRN_BUILD_FULL_CODE_CACHE_OUT: fullCodeCache }, encoding: "utf8" });
    writeFileSync(fullCodeCacheDeflated, deflateRawSync(readFileSync(fullCodeCache), { level: 9 }));
    fullCache["cairn-full.codecache"] = fullCodeCacheDeflated;
  }
  await makeExecutable({ "cairn.js": source, "cairn.codecache": codeCacheDeflated, "cairn-ui": uiAsset, ...full, ...fullCache });
  const check = spawnSync(exe, ["version"], { env: { ...process.env, NODE_OPTIONS: "", CAIRN_BUILD_CODE_CACHE_CHECK: "1" }, encoding: "utf8" });
  if (!/code cache: accepted/.test(check.stderr)) {
    throw new Error(`The executable does not use its code cache: ${check.stderr.trim() || `exit ${check.status}`}`);
  }
  console.log(`code cache: ${(readFileSync(codeCache).length / 1024).toFixed(0)} KiB (${(readFileSync(codeCacheDeflated).length / 1024).toFixed(0)} KiB deflated)`);
  if (fullSource !== undefined) {
    const lazy = spawnSync(exe, ["snapshot", "save"], { env: { ...process.env, NODE_OPTIONS: "", CAIRN_BUILD_CODE_CACHE_CHECK: "1" }, encoding: "utf8" });
    if (!/code cache \(cairn-full\.js\): accepted/.test(lazy.stderr)) {
      throw new Error(`The executable does not use its second bundle's code cache: ${lazy.stderr.trim() || `exit ${lazy.status}`}`);
    }
    console.log(`second bundle's code cache: ${(readFileSync(fullCodeCache).length / 1024).toFixed(0)} KiB (${(readFileSync(fullCodeCacheDeflated).length / 1024).toFixed(0)} KiB deflated)`);
    rmSync(fullCodeCache, { force: true });
    rmSync(fullCodeCacheDeflated, { force: true });
  }
  rmSync(codeCache, { force: true });
  rmSync(codeCacheDeflated, { force: true });
}
rmSync(source, { force: true });
if (fullSource !== undefined) rmSync(fullSource, { force: true });
console.log(`web UI: ${(readFileSync(uiAsset).length / 1024).toFixed(0)} KiB deflated`);
rmSync(uiAsset, { force: true });
console.log(`built ${exe}`);
