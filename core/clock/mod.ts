export type { Clock, Timer } from "./clock.ts";
export { SystemClock, systemClock } from "./system_clock.ts";
export { sleep } from "./sleep.ts";
