import pino, { type Logger } from 'pino';
import { ConfigError, type Config } from './config.js';
import { Store } from './store/index.js';
import { buildApi, type Api } from './api/app.js';
import { DeliveryWorker } from './delivery/worker.js';
import { QueueThread } from './store/queue-thread.js';
import { Heartbeat } from './delivery/heartbeat.js';
import { BackgroundRunner } from './background/runner.js';
import { Metrics } from './metrics/registry.js';
import { type MetricsServer, serveMetrics } from './metrics/server.js';
import { startTracing } from './tracing/tracer.js';
import { Transformations } from './transformations/index.js';

export interface Service {
  config: Config;
  store: Store;
  api: Api | null;
  worker: DeliveryWorker | null;
  /** Base URL of the HTTP API, when this process serves it. */
  url: string | null;
  /** Base URL of the metrics of a `worker` process (HERALD_METRICS_PORT); API processes serve them at `url`/metrics. */
  metricsUrl: string | null;
  /** Stops taking requests, lets in-flight attempts finish (bounded), and closes the store. */
  close(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  // Lines go to stdout asynchronously: under load the lines of many requests leave in one write instead
  // of one blocking write each. A shutdown waits for the last ones (logsWritten).
  const stdout = pino.destination({ dest: 1, sync: false });
  return pino(
    {
      level: config.logLevel,
      // Keys and secrets never reach the logs, even if a future log line carries a request's headers.
      redact: ['req.headers.authorization', 'headers.authorization', '*.signing_secret', '*.key', 'secret'],
    },
    stdout,
  );
}

/**
 * Resolves once every line logged so far has left the process, or after `timeoutMs`: createLogger's
 * destination writes asynchronously, and an exit while a write is under way drops that write (pino's own
 * flush at exit writes only what is still waiting). It ends the destination: lines logged after it (a
 * purge still under way, say) are dropped rather than thrown.
 */
export function logsWritten(logger: Logger, timeoutMs = 2_000): Promise<void> {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | { end?: () => void; once?: (event: 'close', listener: () => void) => void; destroyed?: boolean }
    | undefined;
  if (typeof stream?.end !== 'function' || typeof stream.once !== 'function' || stream.destroyed)
    return Promise.resolve();
  // An ended destination throws on write; the logger's later lines go nowhere instead.
  (stream as { write?: unknown }).write = () => true;
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    stream.once!('close', () => {
      clearTimeout(timer);
      resolve();
    });
    stream.end!();
  });
}

const RETENTION_INTERVAL_MS = 3_600_000;

/** Starts the API listening; a port taken or not allowed, or a HOST that is not this machine's, is bad configuration. */
async function listen(api: Api, config: Config): Promise<string> {
  try {
    return await api.listen({ port: config.port, host: config.host });
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new ConfigError(
      `cannot listen on ${config.host}:${config.port} (HOST, PORT): ${code === 'EADDRINUSE' ? 'the port is in use' : (code ?? message)}`,
    );
  }
}

export async function startService(config: Config, logger: Logger = createLogger(config)): Promise<Service> {
  const store = await Store.open(config);
  let api: Api | null = null;
  let url: string | null = null;
  let worker: DeliveryWorker | null = null;
  let retentionTimer: NodeJS.Timeout | null = null;
  let queueThread: QueueThread | null = null;
  let heartbeat: Heartbeat | null = null;
  let background: BackgroundRunner | null = null;
  let metricsServer: MetricsServer | null = null;
  const metrics = new Metrics(store.metrics);
  const tracer = await startTracing(config);
  // One pool of transformation threads for the API and the worker alike (each takes its share).
  const transformations = new Transformations(config);

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      if (retentionTimer) clearInterval(retentionTimer);
      if (api) await api.close();
      await metricsServer?.close();
      await background?.stop();
      if (worker) await worker.stop();
      await heartbeat?.stop();
      await queueThread?.close();
      await transformations.close();
      await store.close();
      // What spans are still buffered leave before the process does.
      await tracer.shutdown().catch((error) => logger.warn({ err: error }, 'could not export the last spans'));
    })();
    return closing;
  };

  try {
    if (config.role !== 'api') {
      // A worker process on the embedded store runs its queue statements on a second core (queue-thread.ts).
      if (config.role === 'worker' && store.dialect === 'sqlite')
        queueThread = QueueThread.forConfig(config, () => store.events.emit('queued'));
      worker = new DeliveryWorker(
        store,
        config,
        logger.child({ component: 'worker' }),
        queueThread ?? store.queue,
        metrics,
        tracer,
        transformations,
      );
      // PostgreSQL: attempts queued by API processes wake this worker at once (LISTEN/NOTIFY), not at its next poll.
      const listenLog = logger.child({ component: 'listen' });
      store.listen((error) => listenLog.warn({ err: error }, 'LISTEN connection lost; reconnecting'));
      // The worker is known alive before it claims anything; attempts handed back from a dead worker are
      // claimed at once (a general claim reads them: their run_at is now).
      heartbeat = new Heartbeat(
        queueThread ?? store.workers,
        worker.owner,
        logger.child({ component: 'heartbeat' }),
        () => store.events.emit('queued'),
      );
      await heartbeat.start();
      worker.start();
      // Background tasks (an endpoint's recovery) run where deliveries do; one created here starts at once.
      const runner = new BackgroundRunner(store.backgroundTasks, logger.child({ component: 'background' }));
      store.events.on('background', () => runner.wake());
      runner.start();
      background = runner;
      // PostgreSQL's partitions are made ahead and dropped past retention first; the purge then deletes
      // what partitions do not hold (the embedded store's history, and the other tables' rows).
      const partitions = () =>
        store.maintainPartitions().then(
          (work) =>
            work &&
            logger.info({ made: work.made, dropped: work.dropped, defaultRows: work.defaultRows }, 'partitions kept'),
          (error) => logger.warn({ err: error }, 'keeping partitions failed'),
        );
      const purge = () =>
        partitions().then(() =>
          (queueThread ?? store).purgeExpired().then(
            (counts) => logger.info({ counts }, 'retention purge done'),
            (error) => logger.warn({ err: error }, 'retention purge failed'),
          ),
        );
      void purge();
      retentionTimer = setInterval(purge, RETENTION_INTERVAL_MS).unref();
    }
    if (config.role === 'worker' && config.metricsPort !== null) metricsServer = await serveMetrics(metrics, config);
    if (config.role !== 'worker') {
      api = await buildApi(store, config, logger, metrics, tracer, transformations);
      url = (await listen(api, config)).replace('[::1]', 'localhost');
    }
  } catch (error) {
    // What started is stopped before the error leaves: a worker left running would go on delivering.
    await close();
    throw error;
  }

  return { config, store, api, worker, url, metricsUrl: metricsServer?.url ?? null, close };
}
