// Public exports of the gossip wire codec (memberlist 0.2.2 + Serf 0.9.4).
export * from "./messages.ts";
