// What the fault and cluster scenarios share: scale and sleep (settings.ts); the workload and its publisher
// (workload.ts), the projector processes (fleet.ts), interference with a running projector
// (interference.ts) and the final checks (verify.ts).
export * from "./fleet.js";
export * from "./interference.js";
export * from "./settings.js";
export * from "./verify.js";
export * from "./workload.js";
