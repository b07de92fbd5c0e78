// Ports for tests that bind real sockets on 127.0.0.1 (unit tests, and the
// end-to-end harness, scripts/e2e/harness.ts).

import { createSocket } from "node:dgram";
import { createServer } from "node:net";

/** Every port freePort() handed out in this process. */
const handedOut = new Set<number>();

/** Whether TCP and UDP can both bind `port` on 127.0.0.1 right now. */
export async function canBind(port: number): Promise<boolean> {
  const tcp = await new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
  if (!tcp) return false;
  return await new Promise<boolean>((resolve) => {
    const s = createSocket("udp4");
    s.once("error", () => {
      s.close();
      resolve(false);
    });
    s.bind(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/**
 * A port free for TCP and UDP on 127.0.0.1 now, and never one this process
 * was given before. Nothing holds a port between this call and the test
 * binding it, so the OS may offer the same one again: two listeners of one
 * test then fight over it (most likely why a unit test's HTTP listener found
 * its port taken in a clean-clone CI run).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once("error", reject);
      s.listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    if (handedOut.has(port) || !(await canBind(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error("Cannot find a free port on 127.0.0.1");
}
