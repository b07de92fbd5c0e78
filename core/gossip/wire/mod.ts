// Public exports of the gossip wire codec (memberlist 0.2.2 + Serf 0.9.4).
export * from "./messages.ts";
export { lzwCompress, lzwDecompress } from "./lzw.ts";
export { compareBytewise, decodeValue, decodeWhole, MpWriter } from "./msgpack_go.ts";
export type { MpValue } from "./msgpack_go.ts";
export {
  addCrc,
  crc32,
  decodeCompress,
  decodeMessage,
  decodePacket,
  decodePushPullBody,
  decodePushPullHeader,
  decodePushNodeState,
  encodeAck,
  encodeAlive,
  encodeCompound,
  encodeCompress,
  encodeDead,
  encodeErr,
  encodeIndirectPing,
  encodeMessage,
  encodeNack,
  encodePacket,
  encodePing,
  encodePushNodeState,
  encodePushPull,
  encodePushPullHeader,
  encodeStream,
  encodeStreamMessage,
  encodeSuspect,
  encodeUser,
  encodeUserStream,
  measureStream,
  parseStream,
  splitCompound,
} from "./memberlist.ts";
export type { DecodePacketOptions, PacketOptions, SplitCompound, StreamMeasure, StreamParse, StreamParseOptions } from "./memberlist.ts";
export {
  decodeCoordinatePayload,
  decodeQueryFilter,
  decodeSerfMessage,
  decodeTags,
  encodeCoordinatePayload,
  encodeQueryFilter,
  encodeRelay,
  encodeSerfMessage,
  encodeTags,
} from "./serf.ts";
export {
  decryptPacket,
  decryptPayload,
  decryptStreamFrame,
  encryptOverheadBytes,
  encryptPacket,
  encryptPayload,
  encryptStream,
  encryptionVersion,
  Keyring,
  keyFromBase64,
  keyToBase64,
  maxEncryptedStreamBytes,
  peekEncryptedStream,
  randomNonce,
} from "./crypto.ts";
export type { EncryptedFrame, EncryptOptions, NonceSource } from "./crypto.ts";
export { addrToString, ipToString, joinHostPort, parseAddr, parseIp, splitHostPort } from "./addr.ts";
export { bytesWireCodec, createWireCodec, serfWireCodec } from "./codec.ts";
export type { PayloadAdapter, WireCodec, WireCodecOptions } from "./codec.ts";
