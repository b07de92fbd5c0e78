// RaftTransport over the simulated network; the sim address of a server is
// its transport address. With `encode`, messages travel as msgpack bytes and
// are validated on receipt (the codec path of a real transport); without it
// they travel as shallow copies, which is several times faster (entries and
// chunks are never mutated after creation).
import type { SimNetwork } from "../sim/sim_network.ts";
import { decodeRaftMessage, encodeRaftMessage } from "./codec.ts";
import type { RaftMessage, RaftTransport, ServerId } from "./types.ts";

export class SimRaftTransport implements RaftTransport {
  readonly localAddress: string;
  /** Inbound messages that failed to decode. */
  malformed = 0;
  #net: SimNetwork<Uint8Array | RaftMessage>;
  #encode: boolean;
  #handler: (msg: RaftMessage) => void = () => {};

  constructor(net: SimNetwork<Uint8Array | RaftMessage>, address: string, options: { encode?: boolean } = {}) {
    this.#net = net;
    this.#encode = options.encode ?? false;
    this.localAddress = address;
    net.attach(address, (_from, payload) => {
      const msg = payload instanceof Uint8Array ? decodeRaftMessage(payload) : { ...payload };
      if (!msg) {
        this.malformed++;
        return;
      }
      this.#handler(msg);
    });
  }

  send(target: { id: ServerId; address: string }, msg: RaftMessage): void {
    this.#net.send(this.localAddress, target.address, this.#encode ? encodeRaftMessage(msg) : { ...msg });
  }

  onMessage(handler: (msg: RaftMessage) => void): void {
    this.#handler = handler;
  }

  close(): Promise<void> {
    this.#net.detach(this.localAddress);
    this.#handler = () => {};
    return Promise.resolve();
  }
}
