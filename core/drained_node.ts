// Waiting for a node writable (an HTTP response, a socket) to take more.

/** The part of a node stream drained() listens on. */
export interface DrainEmitter {
  on(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

/**
 * Until `stream` drains or closes; both listeners go when either fires (a
 * 'close' listener left behind by each wait piled up on a long stream:
 * Node's MaxListenersExceededWarning then formatted the whole response
 * with util.inspect, ~35 ms of a 100 MiB snapshot save's event loop).
 */
export function drained(stream: DrainEmitter): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
  });
}
