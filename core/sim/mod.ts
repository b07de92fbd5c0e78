export { Rng, seeds } from "./rng.ts";
export { SimClock, drainMicrotasks } from "./sim_clock.ts";
export { SimNetwork, noFaults } from "./sim_network.ts";
export type { Deliver, LinkFaults, NetStats } from "./sim_network.ts";
