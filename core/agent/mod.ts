export { runAgent, startAgent } from "./agent.ts";
export type { AgentIo, RunningAgent } from "./agent.ts";
