// /v1/agent/metrics (consul agent/agent_endpoint.go AgentMetrics): JSON of
// the last finished interval, or Prometheus text with `?format=prometheus`
// when telemetry.prometheus_retention_time is set (415 otherwise, as Consul).
import type { Metrics } from "../metrics/metrics.ts";
import { jsonResponse, textResponse, wantsPretty, type Handler } from "./types.ts";

/** GET /v1/agent/metrics[?format=prometheus] */
export function metricsHandler(options: { metrics: Metrics; prometheus: boolean }): Handler {
  return async (req) => {
    if (req.query.get("format") === "prometheus") {
      if (!options.prometheus) return textResponse(415, "Prometheus is not enabled since its retention time is not positive");
      return { status: 200, headers: { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" }, body: options.metrics.prometheus() };
    }
    return jsonResponse(options.metrics.json(), { pretty: wantsPretty(req) });
  };
}
