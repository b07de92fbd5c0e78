#!/usr/bin/env node
// A stand-in for the `terraform` CLI, written for cairn sync's tests
// (Terraform cannot be installed here). It follows the real CLI's verbs,
// exit codes and files closely enough for a driver to be tested against it:
//   version [-json] | init | workspace select/new/show | validate |
//   plan [-detailed-exitcode] | apply -auto-approve | destroy -auto-approve
// and implements Terraform's consul backend (backend/remote-state/consul)
// from its documented protocol: state at <path> (workspace "default") or
// <path>-env:<workspace>; gzip when `gzip = true`; a payload over 512 KiB
// split into <path>/tfstate.<md5>/<n> chunks named by a JSON link
// {"current-hash", "chunks"}; every write a /v1/txn CAS on the last
// ModifyIndex read; the lock a session (TTL 15s, lock delay 5s) acquiring
// <path>/.lock, with the lock info JSON at <path>/.lockinfo.
//
// "Resources" are one per key of the `services` variable in
// terraform.tfvars. Test knobs: FAKE_TERRAFORM_LOG (append one JSON line
// per invocation), FAKE_TERRAFORM_APPLY_MS (hold the lock this long during
// apply), FAKE_TERRAFORM_PAD_BYTES (pad the state, to force chunking),
// FAKE_TERRAFORM_VERSION, FAKE_TERRAFORM_LOCK_FLAGS.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const zlib = require("node:zlib");
const os = require("node:os");

const VERSION = process.env.FAKE_TERRAFORM_VERSION || "1.6.6";
// consul api.LockFlagValue (0x2ddccbc058a50c18), as Terraform sends it and checks
// on read (a .lock key with other flags is "Existing key does not match lock use").
const LOCK_FLAGS = process.env.FAKE_TERRAFORM_LOCK_FLAGS || "3304740253564472344";
const CHUNK = 524288;
const args = process.argv.slice(2);
const cwd = process.cwd();

function out(s) {
  process.stdout.write(s.endsWith("\n") ? s : `${s}\n`);
}
function fail(msg, code = 1) {
  process.stderr.write(`\nError: ${msg}\n\n`);
  process.exit(code);
}
function logInvocation(extra) {
  if (!process.env.FAKE_TERRAFORM_LOG) return;
  fs.appendFileSync(process.env.FAKE_TERRAFORM_LOG, `${JSON.stringify({ args, cwd, pid: process.pid, at: Date.now(), ...extra })}\n`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- the configuration ---------------------------------------------------
function readMain() {
  const p = path.join(cwd, "main.tf");
  if (!fs.existsSync(p)) fail("No configuration files\n\nApply requires configuration to be present.");
  return fs.readFileSync(p, "utf8");
}
function backendConfig(main) {
  const m = /backend\s+"([^"]+)"\s*\{([\s\S]*?)\n\s*\}/.exec(main);
  if (!m) return { type: "local", config: {} };
  const config = {};
  for (const line of m[2].split("\n")) {
    const kv = /^\s*([A-Za-z_]+)\s*=\s*(.+?)\s*$/.exec(line);
    if (kv) config[kv[1]] = JSON.parse(kv[2]);
  }
  return { type: m[1], config };
}
function moduleSource(main) {
  const m = /module\s+"[^"]+"\s*\{[\s\S]*?source\s*=\s*("[^"]*")/.exec(main);
  return m ? JSON.parse(m[1]) : undefined;
}
function tfvarsServices() {
  const p = path.join(cwd, "terraform.tfvars");
  if (!fs.existsSync(p)) return [];
  const text = fs.readFileSync(p, "utf8");
  const start = text.indexOf("\nservices = {");
  if (start < 0) return [];
  const keys = [];
  const re = /^ {2}"([^"]+)" = \{/gm;
  re.lastIndex = start;
  let m;
  while ((m = re.exec(text))) keys.push(m[1]);
  return keys;
}
function inputsHash() {
  const h = crypto.createHash("sha256");
  for (const f of ["main.tf", "variables.tf", "providers.tf", "terraform.tfvars", "variables.auto.tfvars.json"]) {
    const p = path.join(cwd, f);
    if (fs.existsSync(p)) h.update(`${f}\0`).update(fs.readFileSync(p));
  }
  return h.digest("hex");
}
function workspace() {
  const p = path.join(cwd, ".terraform", "environment");
  return fs.existsSync(p) ? fs.readFileSync(p, "utf8").trim() : "default";
}

// --- the consul backend ----------------------------------------------------
function initedBackend() {
  const p = path.join(cwd, ".terraform", "terraform.tfstate");
  if (!fs.existsSync(p)) fail('Backend initialization required, please run "terraform init"');
  const b = JSON.parse(fs.readFileSync(p, "utf8")).backend;
  if (b.type !== "consul") fail(`the fake terraform implements only the consul backend, not "${b.type}"`);
  return b.config;
}
class Consul {
  constructor(cfg) {
    this.base = `${cfg.scheme || "http"}://${cfg.address || "127.0.0.1:8500"}`;
    this.token = cfg.access_token || process.env.CONSUL_HTTP_TOKEN || "";
    this.path = cfg.path;
    this.gzip = cfg.gzip === true;
    if (!this.path) fail('"path": required field is not set');
  }
  async req(method, p, body) {
    const headers = this.token ? { "X-Consul-Token": this.token } : {};
    const r = await fetch(`${this.base}${p}`, { method, headers, body });
    const text = await r.text();
    return { status: r.status, text };
  }
  key(k) {
    return `/v1/kv/${k.split("/").map(encodeURIComponent).join("/")}`;
  }
  async get(k) {
    const r = await this.req("GET", this.key(k));
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw new Error(`GET ${k}: ${r.status} ${r.text}`);
    const e = JSON.parse(r.text)[0];
    // Flags as Go reads them: the uint64's exact digits (JSON.parse would round them).
    const flags = /"Flags":\s*(\d+)/.exec(r.text)?.[1] ?? "0";
    return { modifyIndex: e.ModifyIndex, session: e.Session, flags, value: e.Value ? Buffer.from(e.Value, "base64") : Buffer.alloc(0) };
  }
  async put(k, v, q = "") {
    const r = await this.req("PUT", `${this.key(k)}${q}`, v);
    if (r.status !== 200) throw new Error(`PUT ${k}: ${r.status} ${r.text}`);
    return r.text.trim() === "true";
  }
  async del(k, q = "") {
    await this.req("DELETE", `${this.key(k)}${q}`);
  }
  statePath(ws) {
    return ws === "default" ? this.path : `${this.path}-env:${ws}`;
  }
  async workspaces() {
    const r = await this.req("GET", `${this.key(`${this.path}-env:`)}?keys&separator=/`);
    const names = r.status === 200 ? JSON.parse(r.text).map((k) => k.slice(this.path.length + 5)).filter((n) => n && !n.includes("/")) : [];
    return ["default", ...names];
  }
  /** Read a state: link + chunks, gzip, md5 check (client.go Get). */
  async readState(ws) {
    const sp = this.statePath(ws);
    const pair = await this.get(sp);
    if (!pair) return { state: undefined, modifyIndex: 0, chunkHash: undefined };
    let payload = pair.value;
    let chunkHash;
    if (payload[0] === 0x7b) {
      const link = JSON.parse(payload.toString("utf8"));
      if (link["current-hash"]) {
        chunkHash = link["current-hash"];
        const parts = [];
        for (const c of link.chunks) {
          const p = await this.get(c);
          if (!p) throw new Error(`Key "${c}" could not be found`);
          parts.push(p.value);
        }
        payload = Buffer.concat(parts);
      }
    }
    if (payload[0] === 0x1f) payload = zlib.gunzipSync(payload);
    if (chunkHash && crypto.createHash("md5").update(payload).digest("hex") !== chunkHash) throw new Error("The remote state does not match the expected hash");
    return { state: JSON.parse(payload.toString("utf8")), modifyIndex: pair.modifyIndex, chunkHash };
  }
  /** Write a state (client.go Put): chunks first, then the link or payload by CAS, then old chunks go. */
  async writeState(ws, state, modifyIndex, oldChunkHash) {
    const sp = this.statePath(ws);
    const data = Buffer.from(JSON.stringify(state, null, 2));
    let payload = this.gzip ? zlib.gzipSync(data) : data;
    if (payload.length > CHUNK) {
      const md5 = crypto.createHash("md5").update(data).digest("hex");
      const chunks = [];
      for (let i = 0; i * CHUNK < payload.length; i++) {
        const k = `${sp.replace(/\/+$/, "")}/tfstate.${md5}/${i}`;
        await this.put(k, payload.subarray(i * CHUNK, (i + 1) * CHUNK));
        chunks.push(k);
      }
      payload = Buffer.from(JSON.stringify({ "current-hash": md5, chunks }));
    }
    const op = { KV: { Verb: modifyIndex === 0 ? "set" : "cas", Key: sp, Value: payload.toString("base64"), Index: modifyIndex } };
    const r = await this.req("PUT", "/v1/txn", JSON.stringify([op]));
    if (r.status !== 200) throw new Error(`consul CAS failed with transaction errors: ${r.text}`);
    if (oldChunkHash) await this.del(`${sp.replace(/\/+$/, "")}/tfstate.${oldChunkHash}/`, "?recurse");
  }
  /** The state lock (client.go lock/unlock): one session per lock, try once. */
  async lock(ws, operation, timeoutMs) {
    const lp = this.statePath(ws).replace(/\/+$/, "");
    const s = await this.req("PUT", "/v1/session/create", JSON.stringify({ Name: "Consul API Lock", TTL: "15s", LockDelay: "5s" }));
    if (s.status !== 200) throw new Error(`creating the lock session: ${s.status} ${s.text}`);
    const sid = JSON.parse(s.text).ID;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // consul api Lock.Lock: a key that exists with other flags is not a lock (ErrLockConflict).
      const existing = await this.get(`${lp}/.lock`);
      if (existing && existing.flags !== LOCK_FLAGS) {
        await this.req("PUT", `/v1/session/destroy/${sid}`);
        process.stderr.write(`\nError: Error acquiring the state lock\n\nError message: Existing key does not match lock use\n`);
        logInvocation({ event: "lock-conflict", flags: existing.flags });
        process.exit(1);
      }
      if (await this.put(`${lp}/.lock`, "", `?acquire=${sid}&flags=${LOCK_FLAGS}`)) break;
      if (Date.now() >= deadline) {
        await this.req("PUT", `/v1/session/destroy/${sid}`);
        const info = await this.get(`${lp}/.lockinfo`);
        const li = info ? JSON.parse(info.value.toString("utf8")) : {};
        process.stderr.write(
          `\nError: Error acquiring the state lock\n\nError message: consul lock already held\nLock Info:\n  ID:        ${li.ID || ""}\n  Path:      ${li.Path || ""}\n  Operation: ${li.Operation || ""}\n  Who:       ${li.Who || ""}\n  Version:   ${li.Version || ""}\n  Created:   ${li.Created || ""}\n  Info:      ${li.Info || ""}\n\n\nTerraform acquires a state lock to protect the state from being written\nby multiple users at the same time. Please resolve the issue above and try\nagain. For most commands, you can disable locking with the "-lock=false"\nflag, but this is not recommended.\n`,
        );
        logInvocation({ event: "lock-held" });
        process.exit(1);
      }
      await sleep(Math.min(1000, Math.max(50, deadline - Date.now())));
    }
    const info = { ID: sid, Operation: operation, Info: `consul session: ${sid}`, Who: `${os.userInfo().username}@${os.hostname()}`, Version: VERSION, Created: new Date().toISOString(), Path: this.statePath(ws) };
    await this.put(`${lp}/.lockinfo`, JSON.stringify(info));
    const renew = setInterval(() => void this.req("PUT", `/v1/session/renew/${sid}`).catch(() => {}), 7_500);
    logInvocation({ event: "locked", session: sid });
    return async () => {
      clearInterval(renew);
      await this.del(`${lp}/.lockinfo`);
      await this.put(`${lp}/.lock`, "", `?release=${sid}&flags=${LOCK_FLAGS}`);
      const held = await this.get(`${lp}/.lock`);
      if (held && !held.session) await this.del(`${lp}/.lock`, `?cas=${held.modifyIndex}`);
      await this.req("PUT", `/v1/session/destroy/${sid}`);
      logInvocation({ event: "unlocked", session: sid });
    };
  }
}

function lockTimeoutMs() {
  const a = args.find((x) => x.startsWith("-lock-timeout="));
  if (!a) return 0;
  const m = /^(\d+)(ms|s|m)$/.exec(a.slice("-lock-timeout=".length));
  if (!m) fail(`invalid value for -lock-timeout: ${a}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000 }[m[2]];
}

function emptyState() {
  return { version: 4, terraform_version: VERSION, serial: 0, lineage: crypto.randomUUID(), outputs: {}, resources: [] };
}

function pad(state) {
  const n = Number(process.env.FAKE_TERRAFORM_PAD_BYTES || 0);
  if (n > 0) {
    // Incompressible-ish filler, so gzip cannot hide the size.
    state.padding = crypto.createHash("sha256").update(String(state.serial)).digest("hex").repeat(1);
    let s = "";
    let h = state.padding;
    while (s.length < n) {
      h = crypto.createHash("sha256").update(h).digest("hex");
      s += h;
    }
    state.padding = s.slice(0, n);
  }
  return state;
}

async function change(verb) {
  const main = readMain();
  const consul = new Consul(initedBackend());
  const ws = workspace();
  const op = verb === "plan" ? "OperationTypePlan" : "OperationTypeApply";
  const lockOff = args.includes("-lock=false");
  const unlock = lockOff ? async () => {} : await consul.lock(ws, op, lockTimeoutMs());
  try {
    const { state, modifyIndex, chunkHash } = await consul.readState(ws);
    const cur = state || emptyState();
    const have = new Set(cur.resources.map((r) => r.name));
    const want = new Set(verb === "destroy" ? [] : tfvarsServices());
    const add = [...want].filter((k) => !have.has(k)).length;
    const del = [...have].filter((k) => !want.has(k)).length;
    const hash = verb === "destroy" ? "" : inputsHash();
    const chg = verb !== "destroy" && cur.cairn_fake_inputs !== undefined && cur.cairn_fake_inputs !== hash ? [...want].filter((k) => have.has(k)).length : 0;
    const same = add === 0 && del === 0 && (verb === "destroy" || cur.cairn_fake_inputs === hash);
    if (verb === "plan") {
      if (same) {
        out("\nNo changes. Your infrastructure matches the configuration.");
        return 0;
      }
      out(`\nTerraform will perform the following actions:\n\n${[...want].map((k) => `  # module.${moduleSource(main) ? "task" : "root"}.null_resource["${k}"] will be created or updated`).join("\n")}\n\nPlan: ${add} to add, ${chg} to change, ${del} to destroy.`);
      return args.includes("-detailed-exitcode") ? 2 : 0;
    }
    if (process.env.FAKE_TERRAFORM_APPLY_MS) await sleep(Number(process.env.FAKE_TERRAFORM_APPLY_MS));
    const next = pad({ ...cur, terraform_version: VERSION, serial: cur.serial + 1, resources: [...want].sort().map((name) => ({ mode: "managed", type: "null_resource", name, instances: [{ attributes: { id: name } }] })), cairn_fake_inputs: hash });
    await consul.writeState(ws, next, modifyIndex, chunkHash);
    out(verb === "destroy" ? `\nDestroy complete! Resources: ${del} destroyed.` : `\nApply complete! Resources: ${add} added, ${chg} changed, ${del} destroyed.`);
    return 0;
  } finally {
    await unlock();
  }
}

async function main() {
  const verb = args[0];
  logInvocation({ workspace: fs.existsSync(path.join(cwd, ".terraform")) ? workspace() : undefined });
  switch (verb) {
    case "version":
    case "-version":
    case "--version":
      if (args.includes("-json")) out(JSON.stringify({ terraform_version: VERSION, platform: `${process.platform}_${process.arch}`, provider_selections: {}, terraform_outdated: false }, null, 2));
      else out(`Terraform v${VERSION}\non ${process.platform}_${process.arch}`);
      return 0;
    case "init": {
      const main = readMain();
      const src = moduleSource(main);
      if (src && /^\.\.?\//.test(src) && !fs.existsSync(path.resolve(cwd, src))) {
        fail(`Unreadable module directory\n\nUnable to evaluate directory symlink: lstat ${src}: no such file or directory`);
      }
      const b = backendConfig(main);
      fs.mkdirSync(path.join(cwd, ".terraform", "modules"), { recursive: true });
      fs.writeFileSync(path.join(cwd, ".terraform", "terraform.tfstate"), JSON.stringify({ version: 3, backend: b }, null, 2));
      fs.writeFileSync(path.join(cwd, ".terraform", "modules", "modules.json"), JSON.stringify({ Modules: [{ Key: "", Source: "", Dir: "." }, ...(src ? [{ Key: "task", Source: src, Dir: src }] : [])] }));
      out(`\nInitializing the backend...\n\nSuccessfully configured the backend "${b.type}"!\n\nTerraform has been successfully initialized!`);
      return 0;
    }
    case "workspace": {
      const sub = args[1];
      const name = args.filter((a) => !a.startsWith("-"))[2];
      if (sub === "show") {
        out(workspace());
        return 0;
      }
      const consul = new Consul(initedBackend());
      const all = await consul.workspaces();
      if (sub === "list") {
        out(all.map((w) => (w === workspace() ? `* ${w}` : `  ${w}`)).join("\n"));
        return 0;
      }
      if (!name) fail("Expected a single argument: NAME.");
      if (sub === "select") {
        if (!all.includes(name)) fail(`Workspace "${name}" doesn't exist.\n\nYou can create this workspace with the "new" subcommand\nor include the "-or-create" flag with the "select" subcommand.`);
        fs.writeFileSync(path.join(cwd, ".terraform", "environment"), name);
        out(`Switched to workspace "${name}".`);
        return 0;
      }
      if (sub === "new") {
        if (all.includes(name)) fail(`Workspace "${name}" already exists`);
        const unlock = await consul.lock(name, "OperationTypeInvalid", lockTimeoutMs());
        try {
          await consul.writeState(name, emptyState(), 0, undefined);
        } finally {
          await unlock();
        }
        fs.writeFileSync(path.join(cwd, ".terraform", "environment"), name);
        out(`Created and switched to workspace "${name}"!`);
        return 0;
      }
      fail(`unknown workspace subcommand "${sub}"`);
      return 1;
    }
    case "validate": {
      const vars = fs.existsSync(path.join(cwd, "variables.tf")) ? fs.readFileSync(path.join(cwd, "variables.tf"), "utf8") : "";
      const tfvars = fs.existsSync(path.join(cwd, "terraform.tfvars")) ? fs.readFileSync(path.join(cwd, "terraform.tfvars"), "utf8") : "";
      readMain();
      for (const m of tfvars.matchAll(/^([A-Za-z_][A-Za-z0-9_]*) = /gm)) {
        if (!new RegExp(`variable "${m[1]}"`).test(vars)) fail(`Value for undeclared variable\n\nA variable named "${m[1]}" was assigned a value, but the root module does not declare a variable of that name.`);
      }
      out("Success! The configuration is valid.");
      return 0;
    }
    case "plan":
    case "apply":
    case "destroy":
      if (verb !== "plan" && !args.includes("-auto-approve")) fail("Apply requires -auto-approve when input is disabled (-input=false)");
      return change(verb);
    default:
      fail(`unknown command "${verb}" (the fake terraform has version, init, workspace, validate, plan, apply, destroy)`);
      return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`\nError: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
  },
);
