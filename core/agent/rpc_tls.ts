// TLS on server RPC (tls.internal_rpc) for the listener and the dialers, as
// Consul's tlsutil.Configurator does it: incoming TLS is accepted whenever
// there is a certificate, and required with verify_incoming; outgoing
// connections use TLS with verify_outgoing, checking the server's chain and,
// with verify_server_hostname, that its certificate is for
// server.<datacenter>.<domain> (so a client certificate cannot pose as a
// server). Built from the files again on reload; a reload whose files do not
// load throws and changes nothing.
import { effectiveTls, hasCertificate, serverTlsName, type EffectiveTls } from "../config/tls.ts";
import type { AgentConfig } from "../config/types.ts";
import type { RpcClientTls, RpcServerTls } from "../rpc/transport_node.ts";
import { reloadedServerContext, tlsClientOptions } from "../tls_context_node.ts";

interface Built {
  server: RpcServerTls | undefined;
  client: RpcClientTls | undefined;
}

export class RpcTls {
  #built: Built;
  #config: Pick<AgentConfig, "tls" | "datacenter" | "domain">;
  /** The datacenter of a server address (other datacenters' servers come from the WAN pool); default ours. */
  dcOf: ((address: string) => string | undefined) | undefined;

  constructor(config: Pick<AgentConfig, "tls" | "datacenter" | "domain">) {
    this.#config = config;
    this.#built = this.#build(config);
  }

  /** Whether this agent dials servers over TLS. */
  get outgoing(): boolean {
    return this.#built.client !== undefined;
  }

  /** What the RPC listener uses for the next connection. */
  readonly server = (): RpcServerTls | undefined => this.#built.server;
  /** What the RPC pools use for the next dial. */
  readonly client = (): RpcClientTls | undefined => this.#built.client;

  /** New certificates from the files (cairn reload / SIGHUP). */
  reload(config: Pick<AgentConfig, "tls" | "datacenter" | "domain">): void {
    const built = this.#build(config);
    this.#config = config;
    this.#built = built;
  }

  #build(config: Pick<AgentConfig, "tls" | "datacenter" | "domain">): Built {
    const t: EffectiveTls = effectiveTls(config.tls, "internalRpc");
    const server: RpcServerTls | undefined = hasCertificate(t) || t.verifyIncoming
      ? { ...(hasCertificate(t) ? { secureContext: reloadedServerContext(t, "internal_rpc") } : {}), verifyIncoming: t.verifyIncoming }
      : undefined;
    const client: RpcClientTls | undefined = t.verifyOutgoing
      ? {
          options: tlsClientOptions(t, "internal_rpc", undefined),
          ...(t.verifyServerHostname
            ? { serverName: (address: string) => serverTlsName(this.dcOf?.(address) ?? this.#config.datacenter, this.#config.domain) }
            : {}),
        }
      : undefined;
    return { server, client };
  }
}
