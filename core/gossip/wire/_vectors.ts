// Test helpers: load the captured vectors and compare our decoded objects
// with the vectors' decoded trees (Go wire names, {hex} for byte slices).
// Private to the wire tests (leading underscore).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

export function loadVectors(file: string): any {
  const url = new URL(`../testdata/vectors/${file}`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8"));
}

export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

const special: Record<string, string> = { ID: "id", CC: "cc", IP: "ip" };

/** Go wire field name -> our camelCase name. */
export function camel(wire: string): string {
  return special[wire] ?? wire[0]!.toLowerCase() + wire.slice(1);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Compares one expected value from a vector with our decoded value. */
export function compareValue(expected: unknown, actual: unknown, path: string): void {
  if (expected === null) {
    const empty = actual === null || actual === undefined || (actual instanceof Uint8Array && actual.length === 0) ||
      (Array.isArray(actual) && actual.length === 0);
    assert.ok(empty, `${path}: expected nil, got ${String(actual)}`);
    return;
  }
  if (isPlainObject(expected) && typeof expected.hex === "string") {
    assert.ok(actual instanceof Uint8Array, `${path}: expected bytes, got ${typeof actual}`);
    assert.equal(toHex(actual), expected.hex, `${path}: bytes differ`);
    return;
  }
  if (isPlainObject(expected) && typeof expected._summary === "string") {
    // Summarised 512-slot event ring: non-nil slots listed by index.
    assert.ok(Array.isArray(actual), `${path}: expected an array`);
    const nonNil = expected.nonNil as Record<string, unknown>;
    for (let i = 0; i < actual.length; i++) {
      const want = nonNil[String(i)];
      if (want === undefined) assert.equal(actual[i], null, `${path}[${i}] should be nil`);
      else compareValue(want, actual[i], `${path}[${i}]`);
    }
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array, got ${typeof actual}`);
    assert.equal(actual.length, expected.length, `${path}: length`);
    expected.forEach((e, i) => compareValue(e, (actual as unknown[])[i], `${path}[${i}]`));
    return;
  }
  if (isPlainObject(expected)) {
    if (actual instanceof Map) {
      assert.equal(actual.size, Object.keys(expected).length, `${path}: map size`);
      for (const [k, v] of Object.entries(expected)) {
        assert.ok(actual.has(k), `${path}: missing map key "${k}"`);
        compareValue(v, actual.get(k), `${path}.${k}`);
      }
      return;
    }
    assert.ok(isPlainObject(actual), `${path}: expected a struct, got ${String(actual)}`);
    compareFields(expected, actual, path);
    return;
  }
  assert.equal(actual, expected, `${path}: value`);
}

/** Every expected wire field must match our camelCase field. */
export function compareFields(expected: Record<string, unknown>, actual: object, path: string): void {
  for (const [k, v] of Object.entries(expected)) {
    compareValue(v, (actual as Record<string, unknown>)[camel(k)], `${path}.${k}`);
  }
}
