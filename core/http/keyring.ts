// /v1/operator/keyring (consul agent/operator_endpoint.go
// OperatorKeyringEndpoint): GET lists the keys in every pool, POST installs,
// PUT makes primary, DELETE removes; bodies are {"Key": "<base64>"}. Each
// operation asks every member through Serf's internal key queries.
import { BadRequestError } from "../errors.ts";
import type { KeyringBackend, KeyringPoolResponse } from "./backends.ts";
import { HttpError } from "./http_error.ts";
import { multiError } from "./members.ts";
import { hasFlag, jsonResponse, wantsPretty, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** consul structs.KeyringResponse as JSON. */
export function keyringResponseJson(r: KeyringPoolResponse): Record<string, unknown> {
  return {
    WAN: r.wan,
    Datacenter: r.datacenter,
    Segment: r.segment,
    Messages: r.messages,
    Keys: r.keys,
    PrimaryKeys: r.primaryKeys,
    NumNodes: r.numNodes,
    Error: r.error ?? "",
  };
}

/** Consul's keyringErrorsOrNil: one line per failing pool plus each node's message. */
export function keyringErrors(responses: readonly KeyringPoolResponse[]): string | undefined {
  const errs: string[] = [];
  for (const r of responses) {
    if (!r.error) continue;
    const pool = r.wan ? "WAN" : `${r.datacenter} (LAN)`;
    errs.push(`${pool} error: ${r.error}`);
    for (const [node, message] of Object.entries(r.messages)) errs.push(`${node}: ${message}`);
  }
  return errs.length > 0 ? multiError(errs) : undefined;
}

function parseKeyBody(req: HttpRequest): string {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(req.body));
  } catch (err) {
    throw new BadRequestError(`Request decode failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const key = typeof body === "object" && body !== null ? (body as Record<string, unknown>).Key : undefined;
  if (typeof key !== "string" || key === "") throw new BadRequestError("Request decode failed: missing \"Key\"");
  return key;
}

/** GET (list), POST (install), PUT (use), DELETE (remove) /v1/operator/keyring; a bad key is the keyring's BadRequestError. */
export function keyringHandler(deps: { keyring: KeyringBackend }): Handler {
  const { keyring } = deps;
  return async (req: HttpRequest): Promise<HttpResponse> => {
    const localOnly = hasFlag(req, "local-only");
    if (localOnly && req.method !== "GET") throw new BadRequestError("local-only can only be set for GET requests");
    let responses: KeyringPoolResponse[];
    if (req.method === "GET") responses = await keyring.list({ localOnly });
    else {
      const key = parseKeyBody(req);
      if (req.method === "POST") responses = await keyring.install(key);
      else if (req.method === "PUT") responses = await keyring.use(key);
      else responses = await keyring.remove(key);
    }
    const errors = keyringErrors(responses);
    if (errors) throw new HttpError(500, errors);
    if (req.method === "GET") return jsonResponse(responses.map(keyringResponseJson), { pretty: wantsPretty(req) });
    return { status: 200, headers: {}, body: "" };
  };
}
