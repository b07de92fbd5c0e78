// In-process RPC: calls go straight to a Server's handlers (dev mode, and a
// server agent answering its own HTTP requests when it is the leader).

import type { Rpc, RpcArgs, RpcMethod, RpcReply } from "./methods.ts";

/** Anything that answers RPCs by method name (core/server Server). */
export interface RpcHandler {
  handle<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>>;
}

export function createLocalRpc(server: RpcHandler): Rpc {
  return {
    call<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>> {
      if (options?.signal?.aborted) return Promise.reject(options.signal.reason);
      return server.handle(method, args, options);
    },
  };
}
