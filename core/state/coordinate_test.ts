import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeCommand, Fsm, ignoreUnknownTypeFlag, MessageType } from "../server/fsm.ts";
import { coordinatesTxn, nodeCoordinatesTxn } from "./coordinate.ts";
import { WatchSet } from "./watch.ts";

const coord = (x: number) => ({ vec: [x, 0, 0, 0, 0, 0, 0, 0], error: 0.5, adjustment: 0.0001, height: 0.00002 });

function register(fsm: Fsm, index: number, node: string): void {
  assert.equal(fsm.apply(index, encodeCommand(MessageType.Register, { node, address: "10.0.0.1" })), true);
}

/** The command the leader proposes: flagged so a server that does not know it skips it. */
function batch(updates: unknown[]): Uint8Array {
  return encodeCommand(MessageType.CoordinateBatchUpdate | ignoreUnknownTypeFlag, { updates });
}

test("coordinates: a batch stores known nodes' coordinates at its index and skips unknown nodes", () => {
  const fsm = new Fsm();
  register(fsm, 2, "Alpha");
  register(fsm, 3, "beta");
  assert.equal(fsm.apply(4, batch([
    { node: "alpha", segment: "", coord: coord(0.001) },
    { node: "beta", segment: "", coord: coord(0.002) },
    { node: "ghost", segment: "", coord: coord(0.003) },
  ])), 2);
  const all = coordinatesTxn(fsm.state, undefined);
  assert.equal(all.index, 4);
  // The row keeps the catalog's spelling of the node.
  assert.deepEqual(all.value.map((c) => [c.node, c.segment, c.coord.vec[0]]), [["Alpha", "", 0.001], ["beta", "", 0.002]]);
  assert.deepEqual(nodeCoordinatesTxn(fsm.state, undefined, "ALPHA").value.map((c) => c.node), ["Alpha"]);
  // A later update replaces the row; a batch of only unknown nodes moves no index.
  assert.equal(fsm.apply(5, batch([{ node: "beta", segment: "", coord: coord(0.009) }])), 1);
  assert.equal(nodeCoordinatesTxn(fsm.state, undefined, "beta").value[0]!.coord.vec[0], 0.009);
  assert.equal(fsm.apply(6, batch([{ node: "ghost", segment: "", coord: coord(0.1) }])), 0);
  assert.equal(fsm.state.maxIndex("coordinates"), 5);
});

test("coordinates: deregistering a node deletes its coordinates, raises the index and wakes watchers", () => {
  const fsm = new Fsm();
  register(fsm, 2, "a");
  register(fsm, 3, "b");
  fsm.apply(4, batch([{ node: "a", segment: "", coord: coord(0.001) }, { node: "b", segment: "", coord: coord(0.002) }]));
  const ws = new WatchSet();
  coordinatesTxn(fsm.state, ws);
  let fired = false;
  ws.onFire(() => (fired = true));
  assert.equal(fsm.apply(5, encodeCommand(MessageType.Deregister, { node: "a" })), true);
  assert.deepEqual(coordinatesTxn(fsm.state, undefined).value.map((c) => c.node), ["b"]);
  assert.equal(fsm.state.maxIndex("coordinates"), 5);
  assert.ok(fired, "the list's watchers wake");
  // Deregistering only a service leaves the node's coordinate alone.
  register(fsm, 6, "b");
  assert.equal(fsm.apply(7, encodeCommand(MessageType.Deregister, { node: "b", serviceId: "nope" })), true);
  assert.equal(coordinatesTxn(fsm.state, undefined).value.length, 1);
});

test("coordinates: malformed batches are refused whole; non-finite coordinates too", () => {
  const fsm = new Fsm();
  register(fsm, 2, "a");
  assert.match(String(fsm.apply(3, encodeCommand(MessageType.CoordinateBatchUpdate, { updates: "x" }))), /not a list/);
  assert.match(String(fsm.apply(4, batch([{ node: "a", segment: "", coord: coord(0.1) }, { node: "a", segment: "", coord: { ...coord(0), error: "big" } }]))), /malformed/);
  assert.match(String(fsm.apply(5, batch([{ node: "a", segment: "", coord: { ...coord(0), vec: [Number.NaN] } }]))), /malformed/);
  assert.equal(coordinatesTxn(fsm.state, undefined).value.length, 0);
});

test("coordinates: carried by a snapshot", async () => {
  const fsm = new Fsm();
  register(fsm, 2, "a");
  fsm.apply(3, batch([{ node: "a", segment: "", coord: coord(0.004) }]));
  const other = new Fsm();
  await other.restore(fsm.snapshot());
  assert.deepEqual(coordinatesTxn(other.state, undefined), coordinatesTxn(fsm.state, undefined));
});
