// TCP checks (consul agent/checks CheckTCP): a connection that opens is
// passing, anything else critical.
import { connect } from "node:net";
import { settleOnce, splitHostPort, type ProbeResult } from "./runner.ts";

/** Connect to `host:port` once; never throws. */
export function tcpProbe(address: string, signal: AbortSignal): Promise<ProbeResult> {
  return settleOnce<ProbeResult>(signal, () => ({ status: "critical", output: `dial tcp ${address}: i/o timeout` }), (finish) => {
    const socket = connect(splitHostPort(address));
    socket.once("connect", () => finish({ status: "passing", output: `TCP connect ${address}: Success` }));
    socket.once("error", (err: Error & { code?: string }) => {
      const reason = err.code === "ECONNREFUSED" ? "connect: connection refused" : err.message;
      finish({ status: "critical", output: `dial tcp ${address}: ${reason}` });
    });
    return () => socket.destroy();
  });
}
