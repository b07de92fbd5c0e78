// Public exports of core/gossip: the pure SWIM/Lifeguard and Serf cores,
// their math, the driver that runs them, and timing profiles. The wire codec
// is in ./wire/mod.ts; the UDP/TCP runtime is ./transport_node.ts (Node only,
// import it directly from an edge file).
export { Awareness, clampScore, scaleTimeout } from "./awareness.ts";
export { BroadcastQueue, retransmitLimit } from "./broadcast_queue.ts";
export type { QueuedBroadcast } from "./broadcast_queue.ts";
export {
  applyForce,
  defaultVivaldiConfig,
  distanceSeconds,
  isCompatible,
  isValidCoordinate,
  newCoordinate,
  rawDistanceSeconds,
  VivaldiClient,
} from "./coordinate.ts";
export type { Coordinate, VivaldiConfig } from "./coordinate.ts";
export { createSerfDriver, GossipDriver, identityCodec } from "./driver.ts";
export type {
  DecodeResult,
  GossipCodec,
  GossipCoreLike,
  GossipDriverOptions,
  GossipTransport,
  GossipTransportHandlers,
  SerfDriver,
  StreamResult,
  Unstamped,
} from "./driver.ts";
export {
  consulSerfTimings,
  consulVsn,
  gossipProfile,
  lanProfile,
  localProfile,
  serfAgentTimings,
  serfAgentVsn,
  serfTimings,
  wanProfile,
} from "./profiles.ts";
export type { GossipProfile, SerfTimings } from "./profiles.ts";
export { LamportClock, SerfCore } from "./serf.ts";
export type {
  MemberEventType,
  QueryParams,
  SerfClocks,
  SerfConfig,
  SerfEvent,
  SerfInput,
  SerfMember,
  SerfMsg,
  SerfQuery,
  SerfReady,
  SerfStatus,
  SerfTypes,
  Tags,
} from "./serf.ts";
export { expectedConfirmations, remainingSuspicionTimeMs, Suspicion, suspicionTimeoutMs } from "./suspicion.ts";
export { defaultSwimVsn, estimateSize, pushPullScaleMs, structuralEquals, SwimCore } from "./swim.ts";
export type {
  AckMsg,
  AliveMsg,
  BytesGossipTypes,
  CompoundMsg,
  DeadMsg,
  ErrMsg,
  GossipTypes,
  IndirectPingMsg,
  NackMsg,
  NodeStateName,
  PingMsg,
  PushNodeState,
  PushPullMsg,
  SuspectMsg,
  SwimConfig,
  SwimDelegate,
  SwimEvent,
  SwimInput,
  SwimMember,
  SwimMessage,
  SwimReady,
  SwimSend,
  UserMsg,
} from "./swim.ts";
