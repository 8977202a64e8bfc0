import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { idTime } from '../domain/ids.js';
import type { AttemptResult } from '../store/queue/index.js';
import type { MetricsReads } from '../store/metrics.js';
import { StoreGauges } from './store-gauges.js';
import type { CompilerStats } from '../event-schemas/compiler.js';

// The metrics one Herald process serves at /metrics (names and labels: decisions, "Metrics"). Each service
// has its own registry, so several services in one process (the tests) count apart; the default process
// metrics (CPU, memory, event loop, GC) describe the process and are collected once for it.

/** Attempt durations: a receiver answers in milliseconds to its timeout (HERALD_ATTEMPT_TIMEOUT, 15 s by default). */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60];
/** Message created → delivered: milliseconds when the first attempt succeeds, minutes to hours after retries. */
const LATENCY_BUCKETS = [
  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600, 21600, 86400,
];
/** API requests: an emit takes about a millisecond; a list or a busy database longer. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

let processRegistry: Registry | null = null;

/** The process's default metrics, collected once however many services the process runs. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** What the delivery worker reports: each attempt made, as it is made. */
export interface AttemptMetrics {
  /** `type`: the endpoint's (`http`, or a destination's). */
  attempted(result: AttemptResult, messageId: string, type: string): void;
  /** An endpoint's circuit opened (a change this process made). */
  circuitOpened(): void;
}

/** `2xx` … `5xx` for an answer, `error` when there was none (timeout, refused connection, nothing sent). */
export function statusClass(status: number | null): string {
  return status === null ? 'error' : `${Math.floor(status / 100)}xx`;
}

export class Metrics implements AttemptMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly registers = [this.registry];

  readonly messagesEmitted = new Counter({
    name: 'herald_messages_emitted_total',
    help: 'Messages created by emits (an idempotent repeat creates none)',
    labelNames: ['livemode'] as const,
    registers: this.registers,
  });
  readonly circuitOpenings = new Counter({
    name: 'herald_circuit_openings_total',
    help: "Endpoints' circuits this process opened (a failing window, or a failed probe)",
    registers: this.registers,
  });
  readonly filtersUnapplied = new Counter({
    name: 'herald_filters_unapplied_total',
    help: "Deliveries made without their endpoint's content filter: the message's HERALD_FILTER_BUDGET ran out",
    registers: this.registers,
  });
  readonly deliveryAttempts = new Counter({
    name: 'herald_delivery_attempts_total',
    help: "Delivery attempts made, by outcome, by class of the HTTP status (error: no answer; none: a destination's, which has no HTTP status) and by endpoint type",
    labelNames: ['outcome', 'status_class', 'type'] as const,
    registers: this.registers,
  });
  readonly attemptDuration = new Histogram({
    name: 'herald_delivery_attempt_duration_seconds',
    help: 'How long each delivery attempt took, request sent to answer read (0 when nothing was sent)',
    buckets: ATTEMPT_BUCKETS,
    registers: this.registers,
  });
  readonly deliveryLatency = new Histogram({
    name: 'herald_delivery_latency_seconds',
    help: 'From the message being created to the attempt that delivered it',
    buckets: LATENCY_BUCKETS,
    registers: this.registers,
  });
  readonly httpRequests = new Counter({
    name: 'herald_http_requests_total',
    help: 'API requests answered, by route pattern and status',
    labelNames: ['route', 'status'] as const,
    registers: this.registers,
  });
  readonly httpDuration = new Histogram({
    name: 'herald_http_request_duration_seconds',
    help: 'How long API requests took to answer, by route pattern',
    labelNames: ['route'] as const,
    buckets: HTTP_BUCKETS,
    registers: this.registers,
  });
  readonly rateLimited = new Counter({
    name: 'herald_rate_limited_total',
    help: "API requests refused with 429 by a rate limit (a plan's requests per second or failed authentications)",
    registers: this.registers,
  });

  /**
   * The emitted counter of each environment, bound once: an emit increments a number and looks up no
   * labels. Both show from the start, so a rate over them never begins with a missing series.
   */
  private readonly emittedIn = {
    test: this.messagesEmitted.labels({ livemode: 'false' }),
    live: this.messagesEmitted.labels({ livemode: 'true' }),
  };

  constructor(reads: MetricsReads) {
    new StoreGauges(reads, this.registers);
    this.emittedIn.test.inc(0);
    this.emittedIn.live.inc(0);
  }

  /** One emit created a message (idempotent repeats do not count). */
  emitted(livemode: boolean): void {
    (livemode ? this.emittedIn.live : this.emittedIn.test).inc();
  }

  circuitOpened(): void {
    this.circuitOpenings.inc();
  }

  attempted(result: AttemptResult, messageId: string, type: string): void {
    this.deliveryAttempts.inc({
      outcome: result.ok ? 'success' : 'failure',
      status_class: type === 'http' ? statusClass(result.responseStatus) : 'none',
      type,
    });
    this.attemptDuration.observe(result.durationMs / 1000);
    if (!result.ok) return;
    // The message's id carries its creation time (src/domain/ids.ts): nothing is read per delivery.
    const created = idTime(messageId);
    if (created !== null) this.deliveryLatency.observe(Math.max(0, result.at - created) / 1000);
  }

  /** Reports an API process's event-schema compiler (src/event-schemas/compiler.ts) when scraped. */
  watchSchemas(compiler: { stats(): CompilerStats }): void {
    let counted = 0;
    new Counter({
      name: 'herald_event_schema_compilations_total',
      help: 'Event schemas compiled on the compile thread (an emit whose validator is kept compiles none)',
      registers: this.registers,
      collect() {
        const { compilations } = compiler.stats();
        this.inc(compilations - counted);
        counted = compilations;
      },
    });
    new Gauge({
      name: 'herald_event_schema_validators_bytes',
      help: 'Bytes of compiled event-schema validators kept (at most HERALD_SCHEMA_CACHE_MB)',
      registers: this.registers,
      collect() {
        this.set(compiler.stats().keptBytes);
      },
    });
  }

  /** The Prometheus text exposition: the process's default metrics, then this service's. */
  async render(): Promise<string> {
    return (await processMetrics().metrics()) + (await this.registry.metrics());
  }
}
