// UDP checks (consul agent/checks CheckUDP): send one empty datagram on a
// connected socket and wait. An answer or silence until the timeout is
// passing (UDP has no handshake: silence is what a healthy server that does
// not reply looks like); an error, which on loopback and most networks means
// an ICMP port unreachable came back, is critical.
import { createSocket } from "node:dgram";
import { isIPv6 } from "node:net";
import type { ProbeResult } from "./runner.ts";

/** Probe `host:port` once, waiting at most `waitMs` for an answer; never throws. */
export function udpProbe(address: string, waitMs: number, signal: AbortSignal): Promise<ProbeResult> {
  const at = address.lastIndexOf(":");
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(at + 1));
  const success: ProbeResult = { status: "passing", output: `UDP connect ${address}: Success` };
  return new Promise((resolve) => {
    let settled = false;
    const socket = createSocket(isIPv6(host) ? "udp6" : "udp4");
    let local = "";
    const finish = (r: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      try {
        socket.close();
      } catch {
        // already closed
      }
      resolve(r);
    };
    const timer = setTimeout(() => finish(success), Math.max(1, waitMs));
    const onAbort = () => finish(success);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    socket.on("error", (err: Error & { code?: string }) => {
      const reason = err.code === "ECONNREFUSED" ? "read: connection refused" : err.message;
      finish({ status: "critical", output: `read udp ${local}->${address}: ${reason}` });
    });
    socket.on("message", () => finish(success));
    socket.connect(port, host, () => {
      const a = socket.address();
      local = `${a.address}:${a.port}`;
      socket.send(new Uint8Array(0), (err) => {
        if (err) finish({ status: "critical", output: `write udp ${local}->${address}: ${err.message}` });
      });
    });
  });
}
