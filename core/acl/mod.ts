// ACLs: policy rules (policy.ts) and the authorizer that decides a request
// against a token's rules (authorizer.ts). Pure. (The token, policy and role
// rows the servers store are in core/state/acl.ts.)
export * from "./policy.ts";
export * from "./authorizer.ts";
