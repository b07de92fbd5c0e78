// Version facts, filled in by esbuild `define` at build time; plain source
// runs (tests, Deno) fall back to the package version.
declare const CAIRN_VERSION: string | undefined;
declare const CAIRN_REVISION: string | undefined;

export const version: string = typeof CAIRN_VERSION === "string" ? CAIRN_VERSION : "0.1.0";
export const revision: string = typeof CAIRN_REVISION === "string" ? CAIRN_REVISION : "";
/** Gossip/RPC protocol version advertised in tags (`vsn`). */
export const protocolVersion = 2;
