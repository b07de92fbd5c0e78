export type {
  DirEntry,
  KvsApplyArgs,
  KvsOp,
  QueryMeta,
  QueryOptions,
  Rpc,
  RpcArgs,
  RpcMethod,
  RpcMethods,
  RpcReply,
  TxnError,
  TxnKvOp,
  TxnKvVerb,
  TxnOp,
  TxnReply,
  TxnResult,
} from "./methods.ts";
export { defaultMaxFrameBytes, encodeFrame, FrameDecoder, FrameError, FrameKind, rpcProtocolV1 } from "./frame.ts";
export type { Frame, FrameErrorReason, OneWayFrame, RequestFrame, ResponseFrame, WireError } from "./frame.ts";
export { fromWireError, toWireError } from "./wire_error.ts";
export {
  createRpcServer,
  defaultRpcPort,
  formatAddress,
  parseAddress,
  RemoteRpc,
  RpcClientPool,
  rpcHandlers,
} from "./transport_node.ts";
export type {
  CallOptions,
  RpcClientPoolOptions,
  RpcClientStats,
  RpcContext,
  RpcHandler,
  RpcServer,
  RpcServerOptions,
  RpcServerStats,
} from "./transport_node.ts";
export { createTcpRaftTransport, raftMessageMethod, TcpRaftTransport } from "./raft_transport_node.ts";
export type { TcpRaftTransportOptions, TcpRaftTransportStats } from "./raft_transport_node.ts";
