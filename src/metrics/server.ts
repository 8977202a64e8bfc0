import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, type Config } from '../config.js';
import { metricsAccess } from './access.js';
import type { Metrics } from './registry.js';

// A process without the HTTP API (role `worker`) serves its metrics on HERALD_METRICS_PORT: `GET /metrics`
// only, with the same bearer token as the API's route when HERALD_METRICS_TOKEN is set.

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function serveMetrics(
  metrics: Metrics,
  config: Pick<Config, 'host' | 'metricsPort' | 'metricsToken'>,
): Promise<MetricsServer> {
  const allowed = metricsAccess(config.metricsToken);
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' && path !== '/metrics/') return void response.writeHead(404).end('Not found\n');
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return void response.writeHead(405, { allow: 'GET, HEAD' }).end();
    if (!allowed(request.headers.authorization))
      return void response
        .writeHead(401, { 'www-authenticate': 'Bearer' })
        .end('Metrics need Authorization: Bearer <HERALD_METRICS_TOKEN>\n');
    metrics.render().then(
      (text) =>
        response
          .writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' })
          .end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500).end('Metrics could not be collected\n'),
    );
  });
  // Scrapers keep their connection open between scrapes (as they do with the API).
  server.keepAliveTimeout = 65_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.metricsPort ?? 0, config.host, () => resolve());
    });
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new ConfigError(
      `cannot serve metrics on ${config.host}:${config.metricsPort} (HOST, HERALD_METRICS_PORT): ${code === 'EADDRINUSE' ? 'the port is in use' : (code ?? message)}`,
    );
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
