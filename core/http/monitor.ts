// /v1/agent/monitor (consul agent/agent_endpoint.go AgentMonitor): the
// agent's log as it happens, one line per record, text or JSON (`?logjson`),
// at `?loglevel` (default info) even when that is below the agent's own level.
// The recent records at the agent's level come first, then new ones until
// the client goes away. A client that cannot keep up loses lines, counted.
import type { LogRecord, LogSink } from "../log/mod.ts";
import { formatJson, formatText, levelRank, parseLogLevel } from "../log/mod.ts";
import type { MonitorBackend } from "./backends.ts";
import { hasFlag, textResponse, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

const maxQueued = 1_024;

/** GET /v1/agent/monitor[?loglevel=][&logjson] */
export function monitorHandler(options: MonitorBackend): Handler {
  return async (req) => monitor(options, req);
}

function monitor(options: MonitorBackend, req: HttpRequest): HttpResponse {
  const raw = req.query.get("loglevel") || "info";
  const level = parseLogLevel(raw);
  if (!level) return textResponse(400, `Unknown log level: ${raw}`);
  const format = hasFlag(req, "logjson") ? formatJson : formatText;
  const min = levelRank(level);

  // Registered now, not when the body is first pulled, so nothing falls between.
  const queue: string[] = options.recent.records().filter((r) => levelRank(r.level) >= min).map((r) => `${format(r)}\n`);
  let dropped = 0;
  let wake: (() => void) | undefined;
  let done = false;
  const follower: LogSink = {
    write(r: LogRecord) {
      if (queue.length >= maxQueued) dropped++;
      else queue.push(`${format(r)}\n`);
      wake?.();
    },
  };
  const stop = (): void => {
    if (done) return;
    done = true;
    options.sink.delete(follower);
    wake?.();
  };
  options.sink.add(follower, level);
  const signal = req.signal;
  if (signal?.aborted) stop();
  signal?.addEventListener("abort", stop, { once: true });

  async function* lines(): AsyncGenerator<string> {
    try {
      while (!done) {
        if (queue.length === 0 && dropped === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        if (dropped > 0) {
          yield `${format({ timeMs: Date.now(), level: "warn", name: "agent.http", message: "monitor dropped log lines", fields: { count: dropped } })}\n`;
          dropped = 0;
        }
        yield queue.splice(0, queue.length).join("");
      }
    } finally {
      stop();
      signal?.removeEventListener("abort", stop);
    }
  }
  return { status: 200, headers: { "Content-Type": "text/plain; charset=utf-8" }, body: "", stream: lines() };
}
