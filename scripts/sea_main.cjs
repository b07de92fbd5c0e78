// The single executable's main script (see scripts/build.ts). It runs the
// bundle, stored in the executable as the asset "cairn.js", through
// vm.Script with V8's code cache from the asset "cairn.codecache": bytecode
// the build recorded from an agent that started, joined a pool, gossiped and
// answered HTTP. With it an agent does not parse and compile each function
// again the first time it runs it (every agent used to do that in the
// middle of its first join, on every packet path at once).
//
// The cache is only an optimisation: V8 checks it against the source and
// its own version and flags, and compiles lazily from the source as usual
// when it does not match (or the build made none).
//
// Build hooks, not for users: CAIRN_BUILD_CODE_CACHE_OUT=<file> compiles
// without the cache and writes a new one to <file> on SIGUSR2;
// CAIRN_BUILD_CODE_CACHE_CHECK=1 reports on stderr whether V8 accepted it.
"use strict";
const sea = require("node:sea");
const v8 = require("node:v8");
const vm = require("node:vm");

function rawAsset(key) {
  try {
    return sea.getRawAsset(key);
  } catch {
    return undefined; // built without it
  }
}

// Tier-up: V8 hands a function to its optimising compiler (TurboFan, on a
// background thread) once the function has run a certain amount of bytecode.
// An agent is idle most of the time and busy in short bursts (a join, a
// failure, a burst of HTTP); at the default threshold such a burst made V8
// optimise functions the burst then no longer needed, and the optimised code
// stayed: 50 agents after a join storm held 2.4 MiB more each (RSS 52.7 vs
// 50.3 MiB, scripts/bench/gossip.ts steady state). Eight times the default
// budget still optimises what stays hot (a server under load), a little
// later. Set before compiling: V8 stamps the code cache with its flags when
// it writes one and checks them when it reads one.
v8.setFlagsFromString("--interrupt-budget=540672");

// Both assets are raw DEFLATE (see scripts/build.ts): the pages of an asset the start reads stay
// resident for the process's life, so the fewer the better; the inflated copies are garbage once
// V8 has the source string and has deserialised the cache.
// One output chunk (both fit in 2 MiB): a single large allocation, which malloc maps on its own
// and unmaps when the buffer is collected, instead of dozens of 16 KiB chunks left in its heap.
const zlib = require("node:zlib");
const inflated = (key) => {
  const raw = rawAsset(key);
  return raw === undefined ? undefined : zlib.inflateRawSync(new Uint8Array(raw), { chunkSize: 2 * 1024 * 1024 });
};

// The text is Latin-1 (the build refuses anything above U+00FF): one byte per character, and V8 keeps
// it as a one-byte string. It is already wrapped as a CommonJS function expression.
function runBundle(key, cacheKey, cacheOutEnv) {
  let source = inflated(key).toString("latin1");
  const cacheOut = process.env[cacheOutEnv];
  let cache = cacheOut ? undefined : inflated(cacheKey);
  const script = new vm.Script(source, { filename: key, cachedData: cache });
  if (process.env.CAIRN_BUILD_CODE_CACHE_CHECK) {
    process.stderr.write(`code cache${key === "cairn.js" ? "" : ` (${key})`}: ${!cache ? "none" : script.cachedDataRejected ? "rejected" : "accepted"}\n`);
  }
  // Dropped before the bundle runs (this frame stays on the stack meanwhile), so the first
  // collections free the inflated cache instead of promoting it to the old generation.
  source = undefined;
  cache = undefined;
  if (cacheOut && key === "cairn.js") {
    process.on("SIGUSR2", () => {
      require("node:fs").writeFileSync(cacheOut, script.createCachedData());
      process.stderr.write(`code cache written to ${cacheOut}\n`);
    });
  } else if (cacheOut) {
    // The second bundle's cache is taken when the command it ran ends (the build runs one).
    process.on("exit", () => require("node:fs").writeFileSync(cacheOut, script.createCachedData()));
  }
  const main = script.runInThisContext();
  const module_ = { exports: {} };
  main.call(module_.exports, module_.exports, require, module_, __filename, __dirname);
}

// The first bundle ("cairn.js", what every agent parses and keeps) leaves out the commands an
// agent never runs; "cairn-full.js" is the whole CLI. When one of those commands is typed, the
// first bundle calls this (cli/run.ts, lazyCommand) and the second one runs the same command line
// and ends the process. Built without it (CAIRN_BUILD_SPLIT=0), the first bundle is the whole CLI.
if (rawAsset("cairn-full.js") !== undefined) {
  const key = Symbol.for("cairn.fullBundle");
  globalThis[key] = () => {
    delete globalThis[key];
    // Its own code cache (the build's CAIRN_BUILD_FULL_CODE_CACHE_OUT run): without one, V8 parsed
    // all 1.5 MB of it before the command began, ~65 ms of every such command's start.
    runBundle("cairn-full.js", "cairn-full.codecache", "CAIRN_BUILD_FULL_CODE_CACHE_OUT");
  };
}
runBundle("cairn.js", "cairn.codecache", "CAIRN_BUILD_CODE_CACHE_OUT");
