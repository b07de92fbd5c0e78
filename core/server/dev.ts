// A single in-memory server for `-dev` and tests: Fsm + DevConsensus + Server.

import type { Clock } from "../clock/clock.ts";
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import type { CoordinateSource } from "../gossip/near.ts";
import type { Rng } from "../sim/rng.ts";
import { DevConsensus } from "./consensus.ts";
import { Fsm } from "./fsm.ts";
import { Server } from "./server.ts";

export function createDevServer(options: { clock: Clock; rng: Rng; logger?: Logger; addr?: string; datacenter?: string; coordinates?: CoordinateSource }): {
  fsm: Fsm;
  consensus: DevConsensus;
  server: Server;
} {
  const logger = options.logger ?? nullLogger();
  const fsm = new Fsm({ logger: logger.named("fsm") });
  const consensus = new DevConsensus({ fsm, addr: options.addr });
  const server = new Server({ fsm, consensus, clock: options.clock, rng: options.rng, logger, datacenter: options.datacenter, coordinates: options.coordinates });
  return { fsm, consensus, server };
}
