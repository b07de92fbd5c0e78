// Standard base64 (RFC 4648 with padding), as Go's encoding/json writes []byte.
// Pure: no Buffer, no btoa.

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const decodeTable = new Int16Array(128).fill(-1);
for (let i = 0; i < alphabet.length; i++) decodeTable[alphabet.charCodeAt(i)] = i;

export function encodeBase64(bytes: Uint8Array): string {
  let out = "";
  const n = bytes.length;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += alphabet[v >> 18]! + alphabet[(v >> 12) & 63]! + alphabet[(v >> 6) & 63]! + alphabet[v & 63]!;
  }
  if (i < n) {
    const rest = n - i;
    const v = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    out += alphabet[v >> 18]! + alphabet[(v >> 12) & 63]!;
    out += rest === 2 ? `${alphabet[(v >> 6) & 63]!}=` : "==";
  }
  return out;
}

/**
 * Decodes standard base64; padding may be omitted, CR/LF are skipped (as Go's
 * StdEncoding). Returns undefined for any other character or a bad length.
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  let s = text;
  if (s.includes("\n") || s.includes("\r")) s = s.replace(/[\r\n]/g, "");
  let end = s.length;
  if (end > 0 && s.charCodeAt(end - 1) === 61) end--;
  if (end > 0 && s.charCodeAt(end - 1) === 61) end--;
  if (s.length % 4 !== 0 && end !== s.length) return undefined; // padded but wrong length
  if (end % 4 === 1) return undefined;
  const out = new Uint8Array(Math.floor((end * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? decodeTable[c]! : -1;
    if (v < 0) return undefined;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return o === out.length ? out : out.subarray(0, o);
}
