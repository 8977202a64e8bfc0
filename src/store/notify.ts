import pg from 'pg';

// PostgreSQL LISTEN/NOTIFY between processes: an API process that queued attempts sends one NOTIFY on
// `herald_tasks`; every worker process listens on a connection of its own and wakes its claim loop.
// Both sides are an optimization over the worker's idle poll: a lost notification costs latency, never a
// delivery, so neither side ever fails a request or stops a worker.

export const TASKS_CHANNEL = 'herald_tasks';

/**
 * Sends NOTIFY after attempts were committed, coalescing bursts: at most one NOTIFY in flight and at most
 * one per `gapMs`. Calls that arrive meanwhile are folded into one trailing NOTIFY, so every commit is
 * followed by a NOTIFY sent after it (5,000 emits cost a few hundred NOTIFYs, not 5,000).
 */
export class TaskNotifier {
  private sending = false;
  private pending = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly send: () => Promise<unknown>,
    private readonly gapMs = 5,
  ) {}

  /** Call after the transaction that queued attempts has committed. Never throws, never waits. */
  notify(): void {
    if (this.closed) return;
    if (this.sending || this.timer) {
      this.pending = true;
      return;
    }
    this.fire();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private fire(): void {
    this.sending = true;
    this.pending = false;
    this.send()
      .catch(() => {
        // The database is away: workers poll, and the listener wakes them once it reconnects.
      })
      .finally(() => {
        this.sending = false;
        if (this.closed) return;
        this.timer = setTimeout(() => {
          this.timer = null;
          if (this.pending && !this.closed) this.fire();
        }, this.gapMs);
        this.timer.unref();
      });
  }
}

export interface TaskListenerOptions {
  connectionString: string;
  /** Called on every notification, and once after each (re)connect since notifications may have been missed. */
  onNotify: () => void;
  /**
   * The payload this process's own NOTIFYs carry: those are ignored, its worker was woken in process
   * already (hearing them again cost a second claim per emit batch).
   */
  ownPayload?: string;
  /** Called when the connection is lost or cannot be made; the listener retries by itself. */
  onError?: (error: unknown) => void;
  /** Called each time LISTEN is in place. */
  onListening?: () => void;
  /** How often an idle connection is checked, so a silently dead one is noticed. */
  pingIntervalMs?: number;
}

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 5_000;

/** A dedicated connection that LISTENs on `herald_tasks` and reconnects by itself when it drops. */
export class TaskListener {
  private client: pg.Client | null = null;
  private retryMs = MIN_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private connecting = false;

  constructor(private readonly options: TaskListenerOptions) {}

  /** True while LISTEN is in place on a live connection. */
  get listening(): boolean {
    return this.client !== null;
  }

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.retryTimer = this.pingTimer = null;
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped || this.connecting || this.client) return;
    this.connecting = true;
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      connectionTimeoutMillis: 5_000,
      query_timeout: 10_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'herald-listen',
    });
    let lost = false;
    const onLost = (error?: unknown) => {
      if (lost) return;
      lost = true;
      void client.end().catch(() => {});
      if (this.client === client) this.client = null;
      if (error !== undefined) this.options.onError?.(error);
      this.scheduleReconnect();
    };
    client.on('notification', (message) => {
      if (message.channel === TASKS_CHANNEL && message.payload !== this.options.ownPayload) this.options.onNotify();
    });
    client.on('error', (error) => onLost(error));
    client.on('end', () => onLost(new Error('LISTEN connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${TASKS_CHANNEL}`);
    } catch (error) {
      this.connecting = false;
      onLost(error);
      return;
    }
    this.connecting = false;
    if (this.stopped || lost) {
      lost = true;
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.retryMs = MIN_RETRY_MS;
    this.startPing();
    this.options.onListening?.();
    // Attempts queued while we were not listening sent NOTIFYs nobody heard: look once now.
    this.options.onNotify();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  /** A connection that died without a FIN (network gone) only shows when we use it. */
  private startPing(): void {
    if (this.pingTimer) return;
    this.pingTimer = setInterval(() => {
      const client = this.client;
      if (!client) return;
      client.query('select 1').catch((error: unknown) => {
        client.emit('error', error instanceof Error ? error : new Error(String(error)));
      });
    }, this.options.pingIntervalMs ?? 30_000);
    this.pingTimer.unref();
  }
}
