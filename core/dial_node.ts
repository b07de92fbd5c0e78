// Where outgoing TCP connections come from. A server bound to one address
// dials from it too, so peers' logs and firewall rules (the robustness
// suite's partitions) can tell apart agents that share a host.
import { isIP, isIPv6 } from "node:net";

/** The local address to dial `host` from: the bind address when it is a specific one of the same family, else the OS's choice. */
export function dialFrom(bindAddr: string, host: string): string | undefined {
  if (bindAddr === "" || bindAddr === "0.0.0.0" || bindAddr === "::") return undefined;
  if (isIP(bindAddr) === 0 || isIP(host) === 0) return undefined;
  return isIPv6(bindAddr) === isIPv6(host) ? bindAddr : undefined;
}
