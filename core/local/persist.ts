// Persistence of services and checks registered through the HTTP API
// (consul agent.persistService / persistCheck): one JSON file per entry in
// `<data-dir>/services/` and `<data-dir>/checks/`, named by a hash of the ID,
// written durably (core/durable_node.ts), so a crash leaves the old file or
// the new one, never half of one. Config-file definitions are
// not persisted: they come back from the config.
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurableSync } from "../durable_node.ts";
import { errorMessage } from "../errors.ts";
import { normalizeCheckType } from "../service_defs/definition.ts";
import { isHealthStatus, type HealthStatus, type LocalCheck, type LocalService } from "../service_defs/types.ts";

/** The last result of a TTL check, kept so a restart within the TTL does not flap it (consul checks/state). */
export interface CheckStateRecord {
  checkId: string;
  status: HealthStatus;
  output: string;
  /** Wall-clock ms after which the saved result no longer counts. */
  expiresWallMs: number;
}

/** A persisted definition with the ACL token it was registered with ("" for none), as Consul keeps it. */
export interface Persisted<T> {
  value: T;
  token: string;
}

export interface DefinitionStore {
  saveService(service: LocalService, token?: string): void;
  removeService(id: string): void;
  saveCheck(check: LocalCheck, token?: string): void;
  removeCheck(id: string): void;
  /** Everything persisted; unreadable files are skipped and named in `errors`. */
  load(): { services: Persisted<LocalService>[]; checks: Persisted<LocalCheck>[]; errors: string[] };
  saveCheckState(state: CheckStateRecord): void;
  /** The saved state, or undefined (none, or unreadable). */
  loadCheckState(checkId: string): CheckStateRecord | undefined;
}

/** Dev mode: nothing survives a restart. */
export class MemoryDefinitionStore implements DefinitionStore {
  readonly services = new Map<string, Persisted<LocalService>>();
  readonly checks = new Map<string, Persisted<LocalCheck>>();
  readonly checkStates = new Map<string, CheckStateRecord>();
  saveService(s: LocalService, token = ""): void {
    this.services.set(s.id, { value: structuredClone(s), token });
  }
  removeService(id: string): void {
    this.services.delete(id);
  }
  saveCheck(c: LocalCheck, token = ""): void {
    this.checks.set(c.checkId, { value: structuredClone(c), token });
  }
  removeCheck(id: string): void {
    this.checks.delete(id);
    this.checkStates.delete(id);
  }
  saveCheckState(state: CheckStateRecord): void {
    this.checkStates.set(state.checkId, { ...state });
  }
  loadCheckState(checkId: string): CheckStateRecord | undefined {
    const s = this.checkStates.get(checkId);
    return s ? { ...s } : undefined;
  }
  load(): { services: Persisted<LocalService>[]; checks: Persisted<LocalCheck>[]; errors: string[] } {
    return { services: [...this.services.values()].map((s) => structuredClone(s)), checks: [...this.checks.values()].map((c) => structuredClone(c)), errors: [] };
  }
}

// node:crypto is loaded on the first save or removal: importing it at start
// initialises OpenSSL (memory: docs/performance.md) in every agent, most of which never
// register a service through the API.
function fileName(id: string): string {
  return `${process.getBuiltinModule("node:crypto").createHash("sha256").update(id).digest("hex").slice(0, 40)}.json`;
}

function writeAtomic(dir: string, name: string, text: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileDurableSync(join(dir, name), text, { mode: 0o600 });
}

const FORMAT_VERSION = 1;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function validService(v: unknown): v is LocalService {
  return isObject(v) && typeof v.id === "string" && v.id !== "" && typeof v.service === "string" && Array.isArray(v.tags) &&
    isObject(v.meta) && typeof v.port === "number" && isObject(v.weights);
}

function validCheck(v: unknown): v is LocalCheck {
  return isObject(v) && typeof v.checkId === "string" && v.checkId !== "" && typeof v.name === "string" && isHealthStatus(v.status) &&
    (v.checkType === undefined || (isObject(v.checkType) && typeof v.checkType.kind === "string"));
}

/** `<dataDir>/services/*.json` and `<dataDir>/checks/*.json`. */
export class FileDefinitionStore implements DefinitionStore {
  readonly #servicesDir: string;
  readonly #checksDir: string;
  readonly #stateDir: string;

  constructor(dataDir: string) {
    this.#servicesDir = join(dataDir, "services");
    this.#checksDir = join(dataDir, "checks");
    this.#stateDir = join(dataDir, "checks", "state");
  }

  // The token is kept beside the definition (mode 0600), as Consul's persistedService does.
  saveService(s: LocalService, token = ""): void {
    writeAtomic(this.#servicesDir, fileName(s.id), JSON.stringify({ version: FORMAT_VERSION, service: s, ...(token ? { token } : {}) }));
  }

  removeService(id: string): void {
    rmSync(join(this.#servicesDir, fileName(id)), { force: true });
  }

  saveCheck(c: LocalCheck, token = ""): void {
    writeAtomic(this.#checksDir, fileName(c.checkId), JSON.stringify({ version: FORMAT_VERSION, check: c, ...(token ? { token } : {}) }));
  }

  removeCheck(id: string): void {
    rmSync(join(this.#checksDir, fileName(id)), { force: true });
    rmSync(join(this.#stateDir, fileName(id)), { force: true });
  }

  saveCheckState(state: CheckStateRecord): void {
    writeAtomic(this.#stateDir, fileName(state.checkId), JSON.stringify({ version: FORMAT_VERSION, state }));
  }

  loadCheckState(checkId: string): CheckStateRecord | undefined {
    try {
      const data: unknown = JSON.parse(readFileSync(join(this.#stateDir, fileName(checkId)), "utf8"));
      const s = isObject(data) ? data.state : undefined;
      if (!isObject(s) || s.checkId !== checkId || !isHealthStatus(s.status) || typeof s.output !== "string" || typeof s.expiresWallMs !== "number") {
        return undefined;
      }
      return { checkId, status: s.status, output: s.output, expiresWallMs: s.expiresWallMs };
    } catch {
      return undefined;
    }
  }

  load(): { services: Persisted<LocalService>[]; checks: Persisted<LocalCheck>[]; errors: string[] } {
    const errors: string[] = [];
    const services: Persisted<LocalService>[] = [];
    const checks: Persisted<LocalCheck>[] = [];
    for (const [dir, key, valid, out] of [
      [this.#servicesDir, "service", validService, services],
      [this.#checksDir, "check", validCheck, checks],
    ] as const) {
      let names: string[];
      try {
        names = readdirSync(dir).filter((n) => n.endsWith(".json") && !n.startsWith(".")).sort();
      } catch (err) {
        if ((err as { code?: string }).code !== "ENOENT") errors.push(`Cannot read "${dir}": ${errorMessage(err)}`);
        continue;
      }
      for (const name of names) {
        const path = join(dir, name);
        try {
          const data: unknown = JSON.parse(readFileSync(path, "utf8"));
          const value = isObject(data) ? data[key] : undefined;
          if (!valid(value)) throw new Error(`not a persisted ${key}`);
          if (key === "check" && (value as LocalCheck).checkType !== undefined) {
            const t = normalizeCheckType((value as LocalCheck).checkType);
            if (!t) throw new Error("the check's type or timing is invalid");
            (value as LocalCheck).checkType = t;
          }
          const token = isObject(data) && typeof data.token === "string" ? data.token : "";
          (out as Persisted<unknown>[]).push({ value, token });
        } catch (err) {
          errors.push(`Cannot load persisted ${key} "${path}": ${errorMessage(err)}`);
        }
      }
    }
    return { services, checks, errors };
  }
}
