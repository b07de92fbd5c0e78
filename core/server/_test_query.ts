// For server tests: QueryOptions with the defaults of a plain read (no
// blocking, no wait, leader consistency), overridden field by field.
import type { QueryOptions } from "../rpc/methods.ts";

export const q = (o: Partial<QueryOptions> = {}): QueryOptions => ({
  minQueryIndex: 0,
  maxQueryTimeMs: 0,
  allowStale: false,
  requireConsistent: false,
  ...o,
});
