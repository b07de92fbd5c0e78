// Version facts, filled in by esbuild `define` at build time; plain source
// runs (tests, Deno) fall back to the package version.
declare const CAIRN_VERSION: string | undefined;
declare const CAIRN_REVISION: string | undefined;
declare const CAIRN_BUILD_DATE: string | undefined;

export const version: string = typeof CAIRN_VERSION === "string" ? CAIRN_VERSION : "0.1.0";
export const revision: string = typeof CAIRN_REVISION === "string" ? CAIRN_REVISION : "";
/** The built commit's date (RFC 3339, UTC); "" in plain source runs. */
export const buildDate: string = typeof CAIRN_BUILD_DATE === "string" ? CAIRN_BUILD_DATE : "";
/** Gossip/RPC protocol version advertised in tags (`vsn`). */
export const protocolVersion = 2;
