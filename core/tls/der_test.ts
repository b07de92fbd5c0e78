// The DER encoder against bytes worked out from X.690 by hand, and the
// reader against what the encoder writes.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bitString,
  boolean,
  children,
  DerError,
  directoryString,
  namedBits,
  oid,
  oidText,
  readElement,
  readTime,
  sequence,
  smallInteger,
  time,
  tlv,
  unsignedInteger,
} from "./der.ts";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

test("der: lengths in short form below 128 and long form from 128", () => {
  assert.equal(hex(tlv(0x04, new Uint8Array(0))), "0400");
  assert.equal(hex(tlv(0x04, new Uint8Array(127))).slice(0, 4), "047f");
  assert.equal(hex(tlv(0x04, new Uint8Array(128))).slice(0, 6), "048180");
  assert.equal(hex(tlv(0x04, new Uint8Array(256))).slice(0, 8), "04820100");
  assert.equal(hex(tlv(0x04, new Uint8Array(70000))).slice(0, 10), "0483011170");
});

test("der: unsigned integers are minimal and never read as negative", () => {
  const cases: [number[], string][] = [
    [[], "020100"],
    [[0], "020100"],
    [[0, 0, 5], "020105"],
    [[0x7f], "02017f"],
    [[0x80], "02020080"],
    [[0xff, 0x01], "020300ff01"],
  ];
  for (const [input, want] of cases) assert.equal(hex(unsignedInteger(Uint8Array.from(input))), want, `magnitude ${input}`);
  assert.equal(hex(smallInteger(2)), "020102");
  assert.equal(hex(smallInteger(0)), "020100");
  assert.equal(hex(smallInteger(65537)), "0203010001");
});

test("der: object identifiers, with multi-byte arcs", () => {
  assert.equal(hex(oid("2.5.29.15")), "0603551d0f");
  assert.equal(hex(oid("1.2.840.10045.4.3.2")), "06082a8648ce3d040302");
  assert.equal(hex(oid("1.3.6.1.5.5.7.3.1")), "06082b06010505070301");
  for (const o of ["2.5.29.15", "1.2.840.10045.4.3.2", "1.2.840.113549.1.1.11", "2.999.3"]) {
    assert.equal(oidText(readElement(oid(o)).content), o);
  }
  assert.throws(() => oid("1"), RangeError);
});

test("der: KeyUsage bits drop trailing zeros and count the unused bits", () => {
  // digitalSignature (0) | keyEncipherment (2): 101xxxxx, 5 unused bits.
  assert.equal(hex(namedBits((1 << 0) | (1 << 2))), "030205a0");
  // digitalSignature | keyCertSign (5) | cRLSign (6): 1000011x, 1 unused bit.
  assert.equal(hex(namedBits((1 << 0) | (1 << 5) | (1 << 6))), "03020186");
  // decipherOnly (8) spills into a second byte.
  assert.equal(hex(namedBits(1 << 8)), "0303070080");
  assert.equal(hex(bitString(Uint8Array.of(1, 2))), "0303000102");
});

test("der: booleans, strings and sequences", () => {
  assert.equal(hex(boolean(true)), "0101ff");
  assert.equal(hex(boolean(false)), "010100");
  assert.equal(hex(directoryString("US")), "13025553"); // PrintableString
  assert.equal(hex(directoryString("a_b")), "0c03615f62"); // "_" is not printable: UTF8String
  assert.equal(hex(directoryString("é")), "0c02c3a9");
  assert.equal(hex(sequence()), "3000");
  assert.equal(hex(sequence(boolean(true))), "30030101ff");
});

test("der: UTCTime through 2049, GeneralizedTime from 2050, whole seconds", () => {
  const enc = (ms: number) => new TextDecoder().decode(readElement(time(ms)).content);
  assert.equal(readElement(time(Date.UTC(2026, 10, 25, 1, 2, 3, 999))).tag, 0x17);
  assert.equal(enc(Date.UTC(2026, 10, 25, 1, 2, 3, 999)), "261125010203Z");
  assert.equal(enc(Date.UTC(2049, 11, 31, 23, 59, 59)), "491231235959Z");
  assert.equal(readElement(time(Date.UTC(2050, 0, 1))).tag, 0x18);
  assert.equal(enc(Date.UTC(2050, 0, 1)), "20500101000000Z");
  for (const ms of [Date.UTC(1999, 0, 2, 3, 4, 5), Date.UTC(2031, 5, 6), Date.UTC(2126, 1, 3, 4, 5, 6)]) {
    assert.equal(readTime(readElement(time(ms))), ms);
  }
  assert.throws(() => time(Date.UTC(10000, 0, 1)), RangeError);
});

test("der: the reader walks nested elements and refuses truncated input", () => {
  const der = sequence(smallInteger(5), sequence(boolean(true), oid("2.5.4.3")));
  const top = readElement(der);
  assert.equal(top.tag, 0x30);
  const [a, b] = children(top.content);
  assert.equal(hex(a!.raw), "020105");
  assert.deepEqual(children(b!.content).map((e) => e.tag), [0x01, 0x06]);
  assert.throws(() => readElement(der.subarray(0, der.length - 1)), DerError);
  assert.throws(() => readElement(Uint8Array.of(0x30)), DerError);
  assert.throws(() => readElement(Uint8Array.of(0x30, 0x85, 1, 1, 1, 1, 1)), DerError);
});
