// ACLs: policy rules (policy.ts), the authorizer that decides a request
// against a token's rules (authorizer.ts), and the token/policy/role shapes
// the servers store (tokens.ts). Pure.
export * from "./policy.ts";
export * from "./authorizer.ts";
