export { applyFilter, compileFilter, evaluateFilter, FilterSyntaxError, parseFilter } from "./filter.ts";
export type { Filter, FilterAst, MatchOp } from "./filter.ts";
