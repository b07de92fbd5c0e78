// memberlist encryption (docs/gossip-wire.md section 5): AES-GCM with a keyring,
// blob = version | nonce(12) | ciphertext | tag(16). Version 1 (no padding) is
// what we send; version 0 (PKCS#7 padding) is accepted on receipt. UDP uses no
// additional data; TCP streams use the 5-byte `0x0a | len` header as AAD.
//
// Uses WebCrypto (`globalThis.crypto.subtle`), so it is async: the transport
// calls it, the protocol core never does. Nonces come from an injectable
// source so tests can reproduce fixed vectors.
// Note: Deno's WebCrypto has no AES-192; 16- and 32-byte keys work everywhere.

import type { WireError, WireResult } from "./messages.ts";
import { MessageType } from "./messages.ts";

export const encryptionVersion = 1;
const nonceSize = 12;
const tagSize = 16;
const blockSize = 16;
/** Overhead of a version 1 blob: 1 + 12 + 16. */
export const encryptOverheadBytes = 1 + nonceSize + tagSize;
/** Largest encrypted stream frame Go accepts (20 MiB). */
export const maxEncryptedStreamBytes = 20 * 1024 * 1024;

export type NonceSource = () => Uint8Array;

export function randomNonce(): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(nonceSize));
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** WebCrypto wants ArrayBuffer-backed views: copy into one. */
function own(u: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(u);
}

function checkKey(key: Uint8Array): void {
  if (key.length !== 16 && key.length !== 24 && key.length !== 32) {
    throw new RangeError(`Key size must be 16, 24 or 32 bytes: got ${key.length}`);
  }
}

/**
 * Ordered encryption keys; index 0 is the primary (used to encrypt).
 * Decryption tries every key in order.
 */
export class Keyring {
  #keys: Uint8Array[] = [];
  #imported = new Map<Uint8Array, Promise<CryptoKey>>();

  /** Throws RangeError on a bad key size (a configuration mistake, not peer input). */
  constructor(keys: readonly Uint8Array[]) {
    if (keys.length === 0) throw new RangeError("A keyring needs at least one key");
    for (const k of keys) this.addKey(k);
  }

  get keys(): readonly Uint8Array[] {
    return this.#keys;
  }

  get primaryKey(): Uint8Array {
    return this.#keys[0]!;
  }

  /** Adds a key at the end (no-op if present). */
  addKey(key: Uint8Array): void {
    checkKey(key);
    if (this.#keys.some((k) => sameBytes(k, key))) return;
    this.#keys.push(key.slice());
  }

  /** Makes an installed key the primary. */
  useKey(key: Uint8Array): WireResult<void> {
    const i = this.#keys.findIndex((k) => sameBytes(k, key));
    if (i < 0) return { ok: false, error: { code: "not_found", message: "Requested key is not in the keyring" } };
    const [k] = this.#keys.splice(i, 1);
    this.#keys.unshift(k!);
    return { ok: true, value: undefined };
  }

  /** Removes a non-primary key. */
  removeKey(key: Uint8Array): WireResult<void> {
    const i = this.#keys.findIndex((k) => sameBytes(k, key));
    if (i === 0) return { ok: false, error: { code: "bad_request", message: "Removing the primary key is not allowed" } };
    if (i > 0) {
      const [k] = this.#keys.splice(i, 1);
      this.#imported.delete(k!);
    }
    return { ok: true, value: undefined };
  }

  /** The WebCrypto key for raw bytes held by this ring. */
  cryptoKey(key: Uint8Array): Promise<CryptoKey> {
    let p = this.#imported.get(key);
    if (!p) {
      p = globalThis.crypto.subtle.importKey("raw", own(key), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
      this.#imported.set(key, p);
    }
    return p;
  }
}

export interface EncryptOptions {
  /** 1 (default, no padding) or 0 (legacy PKCS#7 padding). */
  version?: 0 | 1;
  nonce?: NonceSource;
  /** Additional authenticated data (UDP: none; TCP: the 5-byte header). */
  aad?: Uint8Array;
}

/** Encrypts with the primary key: version | nonce | ciphertext+tag. */
export async function encryptPayload(ring: Keyring, plain: Uint8Array, options: EncryptOptions = {}): Promise<Uint8Array> {
  const version = options.version ?? encryptionVersion;
  const nonce = (options.nonce ?? randomNonce)();
  if (nonce.length !== nonceSize) throw new RangeError(`Nonce must be ${nonceSize} bytes`);
  let data = plain;
  if (version === 0) {
    const pad = blockSize - (plain.length % blockSize);
    data = new Uint8Array(plain.length + pad);
    data.set(plain);
    data.fill(pad, plain.length);
  }
  const key = await ring.cryptoKey(ring.primaryKey);
  const params: AesGcmParams = { name: "AES-GCM", iv: own(nonce), tagLength: 128 };
  if (options.aad && options.aad.length > 0) params.additionalData = own(options.aad);
  const sealed = new Uint8Array(await globalThis.crypto.subtle.encrypt(params, key, own(data)));
  const out = new Uint8Array(1 + nonceSize + sealed.length);
  out[0] = version;
  out.set(nonce, 1);
  out.set(sealed, 1 + nonceSize);
  return out;
}

/** Tries every key of the ring; never throws on bad input. */
export async function decryptPayload(
  ring: Keyring,
  blob: Uint8Array,
  aad: Uint8Array = new Uint8Array(0),
): Promise<WireResult<Uint8Array>> {
  const bad = (message: string): WireResult<Uint8Array> => ({ ok: false, error: { code: "decrypt", message } });
  if (blob.length === 0) return bad("Cannot decrypt an empty payload");
  const version = blob[0]!;
  if (version > encryptionVersion) return bad(`Unsupported encryption version ${version}`);
  const minLen = version === 0 ? 1 + nonceSize + blockSize + tagSize : encryptOverheadBytes;
  if (blob.length < minLen) return bad(`Payload is too small to decrypt: ${blob.length} bytes`);
  const nonce = blob.subarray(1, 1 + nonceSize);
  const sealed = blob.subarray(1 + nonceSize);
  for (const raw of ring.keys) {
    let plain: Uint8Array;
    try {
      const key = await ring.cryptoKey(raw);
      const params: AesGcmParams = { name: "AES-GCM", iv: own(nonce), tagLength: 128 };
      if (aad.length > 0) params.additionalData = own(aad);
      plain = new Uint8Array(await globalThis.crypto.subtle.decrypt(params, key, own(sealed)));
    } catch {
      continue; // wrong key (or key unsupported by this runtime): try the next
    }
    if (version === 0) {
      const pad = plain.length > 0 ? plain[plain.length - 1]! : 0;
      if (pad === 0 || pad > blockSize || pad > plain.length) return bad("Bad PKCS#7 padding");
      plain = plain.subarray(0, plain.length - pad);
    }
    return { ok: true, value: plain };
  }
  return bad("No installed keys could decrypt the message");
}

/** An encrypted UDP datagram (no type byte, no AAD). */
export function encryptPacket(ring: Keyring, plain: Uint8Array, options: { nonce?: NonceSource } = {}): Promise<Uint8Array> {
  return encryptPayload(ring, plain, { nonce: options.nonce });
}

export function decryptPacket(ring: Keyring, datagram: Uint8Array): Promise<WireResult<Uint8Array>> {
  return decryptPayload(ring, datagram);
}

/** An encrypted stream message: 0x0a | len:u32 BE | blob, AAD = the 5 header bytes. */
export async function encryptStream(
  ring: Keyring,
  plain: Uint8Array,
  options: { nonce?: NonceSource } = {},
): Promise<Uint8Array> {
  const header = new Uint8Array(5);
  header[0] = MessageType.encrypt;
  new DataView(header.buffer).setUint32(1, encryptOverheadBytes + plain.length);
  const blob = await encryptPayload(ring, plain, { nonce: options.nonce, aad: header });
  const out = new Uint8Array(5 + blob.length);
  out.set(header);
  out.set(blob, 5);
  return out;
}

export type EncryptedFrame =
  | { status: "more" }
  | { status: "plain" }
  | { status: "frame"; header: Uint8Array; blob: Uint8Array; consumed: number }
  | { status: "error"; error: WireError };

/**
 * Looks at the start of a stream: "plain" if it is not encrypted, "more"
 * until the whole encrypted frame has arrived, then the frame.
 */
export function peekEncryptedStream(buf: Uint8Array, maxBytes = maxEncryptedStreamBytes): EncryptedFrame {
  if (buf.length === 0) return { status: "more" };
  if (buf[0] !== MessageType.encrypt) return { status: "plain" };
  if (buf.length < 5) return { status: "more" };
  const len = new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(1);
  if (len > maxBytes) {
    return { status: "error", error: { code: "too_large", message: `Encrypted stream frame of ${len} bytes exceeds ${maxBytes}` } };
  }
  if (buf.length < 5 + len) return { status: "more" };
  return { status: "frame", header: buf.slice(0, 5), blob: buf.slice(5, 5 + len), consumed: 5 + len };
}

export function decryptStreamFrame(ring: Keyring, header: Uint8Array, blob: Uint8Array): Promise<WireResult<Uint8Array>> {
  return decryptPayload(ring, blob, header);
}

/** Standard base64 (as `serf keygen` prints) to bytes; undefined if invalid. */
export function keyFromBase64(text: string): Uint8Array | undefined {
  try {
    const bin = atob(text.trim());
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    if (out.length !== 16 && out.length !== 24 && out.length !== 32) return undefined;
    return out;
  } catch {
    return undefined;
  }
}

export function keyToBase64(key: Uint8Array): string {
  let bin = "";
  for (const b of key) bin += String.fromCharCode(b);
  return btoa(bin);
}
