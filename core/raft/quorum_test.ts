import { test } from "node:test";
import assert from "node:assert/strict";
import { committedIndex, hasQuorum, majority, voteResult } from "./quorum.ts";

test("majority: strict majority of voters", () => {
  const table: [number, number][] = [[0, 0], [1, 1], [2, 2], [3, 2], [4, 3], [5, 3], [6, 4], [7, 4]];
  for (const [n, want] of table) assert.equal(majority(n), want, `majority(${n})`);
});

test("committedIndex: the index a majority has stored", () => {
  const table: { match: Record<string, number>; voters: string[]; want: number }[] = [
    { voters: [], match: {}, want: 0 },
    { voters: ["a"], match: { a: 7 }, want: 7 },
    { voters: ["a", "b"], match: { a: 7, b: 3 }, want: 3 },
    { voters: ["a", "b", "c"], match: { a: 7, b: 3, c: 5 }, want: 5 },
    { voters: ["a", "b", "c"], match: { a: 7 }, want: 0 },
    { voters: ["a", "b", "c"], match: { a: 7, c: 9 }, want: 7 },
    { voters: ["a", "b", "c", "d"], match: { a: 7, b: 7, c: 1, d: 2 }, want: 2 },
    { voters: ["a", "b", "c", "d", "e"], match: { a: 10, b: 9, c: 8, d: 1, e: 1 }, want: 8 },
    // Non-voters (not in the voter list) never count, whatever their match.
    { voters: ["a", "b", "c"], match: { a: 10, x: 10, y: 10 }, want: 0 },
  ];
  for (const { voters, match, want } of table) {
    assert.equal(committedIndex(voters, (id) => match[id] ?? 0), want, JSON.stringify({ voters, match }));
  }
});

test("voteResult: won, lost, pending", () => {
  const v3 = ["a", "b", "c"];
  const table: { voters: string[]; votes: [string, boolean][]; want: string }[] = [
    { voters: [], votes: [], want: "lost" },
    { voters: ["a"], votes: [["a", true]], want: "won" },
    { voters: v3, votes: [["a", true]], want: "pending" },
    { voters: v3, votes: [["a", true], ["b", true]], want: "won" },
    { voters: v3, votes: [["a", true], ["b", false]], want: "pending" },
    { voters: v3, votes: [["a", true], ["b", false], ["c", false]], want: "lost" },
    { voters: v3, votes: [["a", true], ["x", true]], want: "pending" },
    { voters: ["a", "b", "c", "d"], votes: [["a", true], ["b", true]], want: "pending" },
    { voters: ["a", "b", "c", "d"], votes: [["a", true], ["b", false], ["c", false]], want: "lost" },
  ];
  for (const { voters, votes, want } of table) {
    assert.equal(voteResult(voters, new Map(votes)), want, JSON.stringify({ voters, votes }));
  }
});

test("hasQuorum", () => {
  assert.equal(hasQuorum([], () => true), false);
  assert.equal(hasQuorum(["a", "b", "c"], (id) => id !== "c"), true);
  assert.equal(hasQuorum(["a", "b", "c"], (id) => id === "a"), false);
  assert.equal(hasQuorum(["a", "b", "c", "d"], (id) => id !== "d" && id !== "c"), false);
});
