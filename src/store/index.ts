import { AuditLog } from './audit-log.js';
import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import { ConfigError, type Config } from '../config.js';
import { SecretBox } from '../domain/secrets.js';
import { randomToken } from '../domain/ids.js';
import { outcomeEventSink, raisePolicy } from './operational.js';
import { migrate, openPostgres, openSqlite, type OpenedDatabase } from './db.js';
import type { StoreContext } from './common.js';
import { Organizations } from './organizations.js';
import { EventTypes } from './event-types.js';
import { Applications } from './applications.js';
import { Endpoints } from './endpoints.js';
import { Messages } from './messages.js';
import { Deliveries } from './deliveries.js';
import { Attempts } from './attempts.js';
import { RequestReplays } from './request-replays.js';
import { openQueue, type Queue } from './queue/index.js';
import { Workers } from './workers.js';
import { BackgroundTasks } from './background-tasks.js';
import { Circuits } from './circuits.js';
import { MetricsReads } from './metrics.js';
import { EndpointStats } from './endpoint-stats.js';
import { ApplicationStats } from './application-stats.js';
import { purgeExpired, type PurgeCounts } from './retention.js';
import { maintainPartitions, partitionTables, type PartitionWork } from './partitions/index.js';
import { TASKS_CHANNEL, TaskListener, TaskNotifier } from './notify.js';

export type { Scope, Page, PageRequest } from './common.js';

/**
 * The one asynchronous interface to stored data, the same for the embedded SQLite store and PostgreSQL.
 * Each resource has its own module; this class wires them to one database and one clock.
 */
export class Store {
  readonly organizations: Organizations;
  readonly eventTypes: EventTypes;
  readonly applications: Applications;
  readonly endpoints: Endpoints;
  readonly messages: Messages;
  readonly deliveries: Deliveries;
  readonly attempts: Attempts;
  readonly requestReplays: RequestReplays;
  readonly queue: Queue;
  /** Background tasks (an endpoint's recovery), created by the API and run by workers. */
  readonly backgroundTasks: BackgroundTasks;
  /** Endpoints' circuit breakers (src/store/circuits.ts). */
  readonly circuits: Circuits;
  /** Attempts per endpoint and hour (the stats route, the console's and the portal's charts). */
  readonly endpointStats: EndpointStats;
  /** An application's attempts per hour and event type (the application stats route, the console's chart). */
  readonly applicationStats: ApplicationStats;
  /** Delivery workers' heartbeats (on PostgreSQL through the queue's pool). */
  readonly workers: Workers;
  /** What the store-read gauges of /metrics read (queue depth and age, endpoints per status). */
  readonly metrics: MetricsReads;
  /** Changes of configuration, each written by the change's own transaction (src/store/audit-log.ts). */
  readonly auditLog: AuditLog;
  /**
   * Emits `queued` when attempts were queued in this process, so a local worker starts at once; on
   * PostgreSQL, after `listen()`, also when another process queued attempts (LISTEN/NOTIFY).
   */
  readonly events = new EventEmitter();
  readonly ctx: StoreContext;
  /** PostgreSQL: tells worker processes that attempts were queued (coalesced NOTIFY after commit). */
  private readonly notifier: TaskNotifier | null;
  private listener: TaskListener | null = null;
  /** What this store's NOTIFYs carry, so that its own listener can tell them apart. */
  private readonly notifyPayload = randomToken(12);

  private constructor(
    private readonly opened: OpenedDatabase,
    private readonly config: Config,
  ) {
    this.ctx = { db: opened.db, dialect: opened.dialect, now: Date.now, readOffLoop: opened.readOffLoop };
    this.notifier =
      opened.dialect === 'postgres'
        ? new TaskNotifier(() => sql`select pg_notify(${TASKS_CHANNEL}, ${this.notifyPayload})`.execute(opened.db))
        : null;
    // Called after the transaction that queued attempts committed: wake the local worker, then the others.
    const onQueued = () => {
      this.events.emit('queued');
      this.notifier?.notify();
    };
    this.organizations = new Organizations(this.ctx);
    this.auditLog = new AuditLog(this.ctx);
    this.eventTypes = new EventTypes(this.ctx);
    const raise = raisePolicy(opened.dialect, config.retryScheduleMs);
    this.applications = new Applications(this.ctx, raise, onQueued);
    this.endpoints = new Endpoints(
      this.ctx,
      new SecretBox(config.secretKey, config.previousSecretKeys),
      raise,
      onQueued,
    );
    this.messages = new Messages(this.ctx, config, onQueued);
    this.deliveries = new Deliveries(this.ctx, onQueued);
    this.attempts = new Attempts(this.ctx);
    this.requestReplays = new RequestReplays(this.ctx, config.idempotencyTtlMs);
    const queueCtx = { ...this.ctx, db: opened.queueDb };
    this.queue = openQueue(
      queueCtx,
      { endpoints: this.endpoints, events: outcomeEventSink(queueCtx.db, raise) },
      config,
      onQueued,
      opened.queuePool,
    );
    this.workers = new Workers({ ...this.ctx, db: opened.queueDb }, raise);
    this.backgroundTasks = new BackgroundTasks(this.ctx, onQueued, config.filterBudget);
    this.circuits = new Circuits(this.ctx, raise, config.circuit, onQueued);
    this.metrics = new MetricsReads(this.ctx);
    this.endpointStats = new EndpointStats(this.ctx);
    this.applicationStats = new ApplicationStats(this.ctx);
  }

  /** Opens the configured store and brings its schema up to date; a database that cannot be reached or opened stops start-up with one line (ConfigError). */
  static async open(config: Config): Promise<Store> {
    let opened: OpenedDatabase;
    try {
      opened = config.databaseUrl ? openPostgres(config.databaseUrl, config.dbPoolSize) : openSqlite(config.dataDir);
    } catch (error) {
      throw unopenable(config, error);
    }
    try {
      await migrate(opened.db);
    } catch (error) {
      await opened.close().catch(() => {});
      throw unopenable(config, error);
    }
    return new Store(opened, config);
  }

  /**
   * PostgreSQL: listens for attempts queued by other processes on a dedicated connection (which
   * reconnects by itself) and emits `queued` for each. Worker processes call this; on SQLite it does nothing.
   */
  listen(onError?: (error: unknown) => void): void {
    if (this.opened.dialect !== 'postgres' || !this.config.databaseUrl || this.listener) return;
    this.listener = new TaskListener({
      connectionString: this.config.databaseUrl,
      onNotify: () => this.events.emit('queued'),
      ownPayload: this.notifyPayload,
      ...(onError ? { onError } : {}),
    });
    this.listener.start();
  }

  /** True while this store listens for other processes' NOTIFYs (PostgreSQL, after `listen()`). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  get dialect() {
    return this.opened.dialect;
  }

  get pool() {
    return this.opened.pool;
  }

  /** The worker's queue sessions (PostgreSQL: a pool of their own, src/store/db.ts); on SQLite the store's db. */
  get queueDb() {
    return this.opened.queueDb;
  }

  /** True when the database answers. */
  async healthy(): Promise<boolean> {
    try {
      await sql`select 1`.execute(this.ctx.db);
      return true;
    } catch {
      return false;
    }
  }

  purgeExpired(): Promise<PurgeCounts> {
    return purgeExpired(this.ctx, this.config);
  }

  /** PostgreSQL, once partitioned: partitions made ahead and dropped past retention; null otherwise. */
  maintainPartitions(): Promise<PartitionWork | null> {
    return maintainPartitions(this.ctx, this.partitionSettings());
  }

  /** PostgreSQL: partitions the history tables (`herald partition`); false when they were already. */
  partitionTables(): Promise<boolean> {
    return partitionTables(this.ctx, this.partitionSettings());
  }

  private partitionSettings() {
    return {
      intervalMs: this.config.partitionIntervalMs,
      ahead: this.config.partitionsAhead,
      retentionMs: this.config.retentionMs,
    };
  }

  async close(): Promise<void> {
    this.notifier?.close();
    await this.listener?.stop();
    this.listener = null;
    await this.opened.close();
  }
}

/** Why the store could not be opened, in one line that names the setting and never the URL (it may hold a password). */
function unopenable(config: Config, error: unknown): Error {
  if (error instanceof ConfigError) return error;
  const e = error as { code?: string; message?: string; errors?: { message?: string }[] };
  // A refused connection to a name with several addresses is an AggregateError with an empty message.
  const reason = e.message || e.errors?.map((inner) => inner.message).join('; ') || e.code || String(error);
  const where = config.databaseUrl
    ? 'the database (HERALD_DATABASE_URL)'
    : `the embedded store in ${config.dataDir} (HERALD_DATA_DIR)`;
  return new ConfigError(`cannot open or migrate ${where}: ${reason}`, { cause: error });
}
