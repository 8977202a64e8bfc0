import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setupOrg } from '../lib/herald.js';
import { tempDir } from '../lib/procs.js';
import { round } from '../lib/stats.js';
import { mb, type Context, type ScenarioResult } from '../lib/context.js';
import { fastest, heraldOptions, measureClosed, startHerald, stopAll, type ClosedFigures } from './common.js';

const APPS = 10;

/**
 * Ingest with OpenTelemetry export on against off: two API processes on the embedded store, one with
 * OTEL_EXPORTER_OTLP_ENDPOINT set to an OTLP/HTTP sink in this process (it reads and drops what it is
 * sent), taking turns in the closed loop; the better run of each counts. A recorded ratio, not a target:
 * it is the price of exporting two spans (the request's and the emit's) per emit with the SDK's defaults.
 */
export async function tracing(ctx: Context): Promise<ScenarioResult> {
  let spansBytes = 0;
  let exports = 0;
  const sink = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => {
      spansBytes += chunk.length;
    });
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const off = await startHerald(
    heraldOptions(ctx, { name: 'tracing-off', role: 'api', dataDir: tempDir('herald-bench-tracing-off-') }),
  );
  const on = await startHerald(
    heraldOptions(ctx, {
      name: 'tracing-on',
      role: 'api',
      dataDir: tempDir('herald-bench-tracing-on-'),
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl },
    }),
  );
  try {
    const offSetup = await setupOrg(off.url!, APPS, 1, (a) => `${ctx.receiver.url}/tracing-off/${a}`);
    const onSetup = await setupOrg(on.url!, APPS, 1, (a) => `${ctx.receiver.url}/tracing-on/${a}`);
    const rounds = ctx.quick ? 1 : 2;
    const offRuns: ClosedFigures[] = [];
    const onRuns: ClosedFigures[] = [];
    for (let r = 0; r < rounds; r++) {
      ctx.log('  closed loop, export off');
      offRuns.push(await measureClosed(ctx, [off.url!], offSetup.key, offSetup.appIds));
      ctx.log('  closed loop, export on');
      onRuns.push(await measureClosed(ctx, [on.url!], onSetup.key, onSetup.appIds));
    }
    const best = { off: fastest(offRuns), on: fastest(onRuns) };
    const ratio = round(best.on.rate / best.off.rate);
    const offRss = await stopAll(off);
    const peak = await stopAll(on);
    return {
      name: 'tracing',
      title: 'Ingest with OpenTelemetry export on vs off (SQLite, API role)',
      store: 'sqlite',
      figures: {
        emitsPerSecExportOn: best.on.rate,
        p99MsExportOn: best.on.p99,
        errorsExportOn: best.on.errors,
        otlpExports: exports,
        otlpMegabytes: mb(spansBytes),
      },
      baseline: { emitsPerSecExportOff: best.off.rate, p99MsExportOff: best.off.p99, peakRssMb: mb(offRss) },
      ratios: { exportOnVsOff: ratio },
      peakRssMb: mb(peak),
      targets: [],
      notes: [
        `the better of ${rounds} alternating closed-loop runs each: off ${offRuns.map((r) => r.rate).join(' / ')}, on ${onRuns.map((r) => r.rate).join(' / ')} emits/s`,
        "export on: the SDK's batch processor at its defaults (a queue of 2,048 spans, batches of 512 every 5 s), so under full load spans past the queue are dropped, not waited for",
      ],
      seconds: 0,
    };
  } finally {
    await stopAll(off, on);
    await new Promise((resolve) => sink.close(resolve));
  }
}
