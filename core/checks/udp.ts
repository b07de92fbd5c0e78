// UDP checks (consul agent/checks CheckUDP): send one empty datagram on a
// connected socket and wait. An answer or silence until the timeout is
// passing (UDP has no handshake: silence is what a healthy server that does
// not reply looks like); an error, which on loopback and most networks means
// an ICMP port unreachable came back, is critical.
import { createSocket } from "node:dgram";
import { isIPv6 } from "node:net";
import { settleOnce, splitHostPort, type ProbeResult } from "./runner.ts";

/** Probe `host:port` once, waiting at most `waitMs` for an answer; never throws. */
export function udpProbe(address: string, waitMs: number, signal: AbortSignal): Promise<ProbeResult> {
  const { host, port } = splitHostPort(address);
  const success: ProbeResult = { status: "passing", output: `UDP connect ${address}: Success` };
  return settleOnce<ProbeResult>(signal, () => success, (finish) => {
    const socket = createSocket(isIPv6(host) ? "udp6" : "udp4");
    let local = "";
    const timer = setTimeout(() => finish(success), Math.max(1, waitMs));
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
    return () => {
      clearTimeout(timer);
      try {
        socket.close();
      } catch {
        // already closed
      }
    };
  });
}
