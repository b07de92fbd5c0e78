// TCP checks (consul agent/checks CheckTCP): a connection that opens is
// passing, anything else critical.
import { connect } from "node:net";
import type { ProbeResult } from "./runner.ts";

/** Connect to `host:port` once; never throws. */
export function tcpProbe(address: string, signal: AbortSignal): Promise<ProbeResult> {
  const at = address.lastIndexOf(":");
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(at + 1));
  return new Promise((resolve) => {
    let settled = false;
    const socket = connect({ host, port });
    const finish = (r: ProbeResult) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(r);
    };
    const onAbort = () => finish({ status: "critical", output: `dial tcp ${address}: i/o timeout` });
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => finish({ status: "passing", output: `TCP connect ${address}: Success` }));
    socket.once("error", (err: Error & { code?: string }) => {
      const reason = err.code === "ECONNREFUSED" ? "connect: connection refused" : err.message;
      finish({ status: "critical", output: `dial tcp ${address}: ${reason}` });
    });
  });
}
