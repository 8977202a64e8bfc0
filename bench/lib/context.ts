import type { ReceiverProcess } from './receiver.js';

// What every scenario gets, and the shape of what it returns.

export interface Sizes {
  ingestSeconds: number;
  warmupSeconds: number;
  ingestConcurrency: number;
  deliveries: number;
  /** PostgreSQL delivery backlog (smaller: the worker drains it far more slowly there). */
  pgDeliveries: number;
  /** The backlog each contender drains in the peers scenario (Herald on both stores, BullMQ, graphile-worker). */
  peerDeliveries: number;
  e2eRate: number;
  e2eSeconds: number;
  fanoutEndpoints: number;
  fanoutRounds: number;
  backlog: number;
  backlogSamples: number;
  slowSeconds: number;
  /** Due attempts queued for the slow endpoint in the neighbour scenario. */
  neighbourBacklog: number;
  /** Messages per second emitted in the slow-neighbour scenario, open loop. */
  slowNeighbourRate: number;
  slowNeighbourSeconds: number;
  /** How long slow-neighbour waits after its last emit for the fast endpoints' messages still to come. */
  slowNeighbourWaitSeconds: number;
  /** Deliveries of history the retention scenario loads (over ten days) before removing the oldest day. */
  retentionDeliveries: number;
}

export const FULL: Sizes = {
  ingestSeconds: 10,
  warmupSeconds: 2,
  ingestConcurrency: 64,
  deliveries: 20_000,
  pgDeliveries: 5_000,
  peerDeliveries: 20_000,
  e2eRate: 1_000,
  e2eSeconds: 10,
  fanoutEndpoints: 1_000,
  fanoutRounds: 3,
  backlog: 1_000_000,
  backlogSamples: 200,
  slowSeconds: 10,
  neighbourBacklog: 100_000,
  slowNeighbourRate: 1_000,
  slowNeighbourSeconds: 20,
  slowNeighbourWaitSeconds: 10,
  retentionDeliveries: 10_000_000,
};

export const QUICK: Sizes = {
  ingestSeconds: 1.5,
  warmupSeconds: 0.5,
  ingestConcurrency: 64,
  deliveries: 1_500,
  pgDeliveries: 500,
  peerDeliveries: 1_000,
  e2eRate: 1_000,
  e2eSeconds: 1.5,
  fanoutEndpoints: 200,
  fanoutRounds: 1,
  backlog: 20_000,
  backlogSamples: 30,
  slowSeconds: 1.5,
  neighbourBacklog: 5_000,
  slowNeighbourRate: 300,
  slowNeighbourSeconds: 8,
  slowNeighbourWaitSeconds: 3,
  retentionDeliveries: 20_000,
};

export interface Target {
  name: string;
  /** Human-readable goal, e.g. ">= 8000/s". */
  goal: string;
  value: number;
  pass: boolean;
}

export interface ScenarioResult {
  name: string;
  title: string;
  store: 'sqlite' | 'postgres';
  /** Herald's figures (rates per second, latencies in ms, times in ms, sizes in MB). */
  figures: Record<string, number>;
  /** The baseline's figures measured in the same run. */
  baseline: Record<string, number>;
  /** Herald / baseline (or scenario / reference) ratios. */
  ratios: Record<string, number>;
  /** Peak RSS of the service process(es), MB: the largest one process reached. */
  peakRssMb: number;
  targets: Target[];
  notes: string[];
  seconds: number;
}

export interface Context {
  quick: boolean;
  sizes: Sizes;
  receiver: ReceiverProcess;
  logDir: string;
  profileDir: string | undefined;
  /** Results so far in this run (the slow-endpoint scenario compares with end-to-end). */
  results: Map<string, ScenarioResult>;
  log(message: string): void;
}

export const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

export function target(name: string, goal: string, value: number, pass: boolean): Target {
  return { name, goal, value, pass: Number.isFinite(value) && pass };
}
