import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { startTestService, type TestService } from '../../support/service.js';
import { launchBrowser } from '../../support/browser.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';

// The charts of chart.js (src/console/chart.ts), served to the console and the portal, drawn in headless
// Chromium from real stats: an endpoint's attempts of which some failed and whose receiver took known
// times to answer, and its application's attempts by event type. The page is the console's (same origin,
// so its Content-Security-Policy admits chart.js); the charts are drawn into a blank body.

let service: TestService;
let receiver: Receiver;
let api: Client;

interface Bucket {
  start: string;
  success: number;
  failure: number;
  p50_ms: number | null;
  p95_ms: number | null;
}
interface Counts {
  success: number;
  failure: number;
}
interface TypeBucket extends Counts {
  start: string;
  event_types: (Counts & { event_type: string })[];
  other: Counts;
}

before(async () => {
  // One attempt per delivery: a failure is not retried.
  service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
  receiver = await new Receiver().start();
  // The payload says how long the receiver takes and whether it fails.
  receiver.respond = (request) => {
    const { delay, fail } = JSON.parse(request.body).data;
    return { status: fail ? 500 : 204, delayMs: delay };
  };
  ({ test: api } = await bootstrap(service.url, 'Charts org'));
});
after(async () => {
  await service?.stop();
  await receiver?.stop();
});

test('chart.js is served to the console and the portal alike, and builds its SVG without HTML strings or styles', async () => {
  const consoleAsset = await fetch(`${service.url}/console-assets/chart.js`);
  const portal = await fetch(`${service.url}/portal-assets/chart.js`);
  assert.equal(consoleAsset.status, 200);
  assert.match(consoleAsset.headers.get('content-type') ?? '', /^text\/javascript/);
  const script = await consoleAsset.text();
  assert.equal(await portal.text(), script);
  assert.match(script, /createElementNS/);
  assert.match(script, /drawByType/);
  assert.doesNotMatch(
    script,
    /innerHTML|outerHTML|insertAdjacentHTML|\.style\b|'style'|eval\(|new Function|https?:\/\/(?!www\.w3\.org\/2000\/svg)/,
  );
});

test('in a browser: the charts have axes with a scale, stacked bars in proportion, a legend and the p50/p95 lines', async (t) => {
  for (const name of ['invoice.refunded', 'customer.created'])
    assert.ok([201, 409].includes((await api.post('/api/v1/event-types', { name })).status));
  const app = (await api.post('/api/v1/applications', { name: 'Charted' })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/charted` })).body;
  const sent: [type: string, delay: number, fail: boolean][] = [
    ['invoice.paid', 20, false],
    ['invoice.paid', 60, false],
    ['invoice.paid', 100, true],
    ['invoice.paid', 140, false],
    ['invoice.refunded', 180, false],
    ['invoice.refunded', 40, true],
    ['customer.created', 80, false],
  ];
  for (const [event_type, delay, fail] of sent)
    assert.equal(
      (await api.post('/api/v1/messages', { app_id: app.id, event_type, payload: { delay, fail } })).status,
      201,
    );
  const stats = await eventually(
    async () => {
      const body = (await api.get(`/api/v1/endpoints/${endpoint.id}/stats`)).body;
      return body.totals.success + body.totals.failure === sent.length ? body : null;
    },
    15_000,
    'every attempt recorded',
  );
  const appStats = (await api.get(`/api/v1/applications/${app.id}/stats`)).body;
  assert.deepEqual(appStats.totals, { success: 5, failure: 2 });
  assert.deepEqual(
    appStats.event_types.map((type: { event_type: string }) => type.event_type),
    ['invoice.paid', 'invoice.refunded', 'customer.created'],
  );

  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(`${service.url}/console`);
  await page.waitForFunction(() => typeof (window as any).HeraldChart?.drawByType === 'function');

  // Draws into a blank body and reads back what a person would see: ticks, bars, points and legends.
  const drawn = await page.evaluate(
    ({ stats, appStats }) => {
      const chart = (window as any).HeraldChart;
      document.body.textContent = '';
      const counts = document.body.appendChild(document.createElement('div'));
      const byType = document.body.appendChild(document.createElement('div'));
      chart.draw(counts, stats);
      chart.drawByType(byType, appStats);
      const number = (element: Element, name: string) => Number(element.getAttribute(name));
      const ticks = (svg: Element) =>
        [...svg.querySelectorAll('.y-axis .tick')].map((tick) => ({
          value: Number((tick as SVGElement).dataset.value),
          label: tick.querySelector('.tick-label')?.textContent,
          y: number(tick.querySelector('line.axis') as Element, 'y1'),
        }));
      const rect = (element: Element | null) =>
        element && { y: number(element, 'y'), height: number(element, 'height'), class: element.getAttribute('class') };
      const [countSvg, latencySvg] = [...counts.querySelectorAll('svg')];
      const typeSvg = byType.querySelector('svg') as SVGSVGElement;
      return {
        svgs: counts.querySelectorAll('svg').length,
        countTicks: ticks(countSvg!),
        hourLabels: [...countSvg!.querySelectorAll('.x-axis .hour-label')].map((label) => label.textContent),
        buckets: [...countSvg!.querySelectorAll('.bucket')].map((bucket) => ({
          start: (bucket as SVGElement).dataset.start,
          success: rect(bucket.querySelector('.bar-success')),
          failure: rect(bucket.querySelector('.bar-failure')),
        })),
        legend: counts.querySelector('.chart-legend')?.textContent,
        legendSwatches: counts.querySelectorAll('.chart-legend .swatch').length,
        latencyTicks: ticks(latencySvg!),
        points: [...latencySvg!.querySelectorAll('circle.point')].map((point) => ({
          class: point.getAttribute('class'),
          start: (point as SVGElement).dataset.start,
          ms: Number((point as SVGElement).dataset.ms),
          cy: number(point, 'cy'),
        })),
        lines: [...latencySvg!.querySelectorAll('path')].map((path) => path.getAttribute('class')),
        latencyKey: counts.querySelector('.chart-key')?.textContent,
        typeTicks: ticks(typeSvg),
        typeHourLabels: typeSvg.querySelectorAll('.x-axis .hour-label').length,
        typeBuckets: [...typeSvg.querySelectorAll('.bucket')].map((bucket) =>
          [...bucket.querySelectorAll('rect.segment')].map((segment) => ({
            type: (segment as SVGElement).dataset.eventType,
            count: Number((segment as SVGElement).dataset.count),
            ...rect(segment)!,
          })),
        ),
        typeLegend: [...byType.querySelectorAll('.chart-legend .legend-item')].map((item) => ({
          text: item.textContent,
          swatch: item.querySelector('.swatch')?.getAttribute('class'),
        })),
        styled: document.querySelectorAll('[style]').length,
      };
    },
    { stats, appStats },
  );

  assert.equal(drawn.svgs, 2, 'a count chart and a duration chart');
  const buckets: Bucket[] = stats.buckets;
  const peak = Math.max(...buckets.map((b) => b.success + b.failure));

  // The count axis: whole-number ticks from 0 up, labelled with their values, the top one at least the busiest hour.
  const scaleOf = (ticks: { value: number; label?: string | null; y: number }[]) => {
    assert.ok(ticks.length >= 2, 'ticks');
    assert.equal(ticks[0]!.value, 0);
    for (const tick of ticks) assert.equal(tick.label, String(tick.value));
    const top = ticks.at(-1)!;
    // Pixels per unit, the same between every pair of ticks: a linear scale.
    const unit = (ticks[0]!.y - top.y) / top.value;
    for (const tick of ticks)
      assert.ok(Math.abs(ticks[0]!.y - tick.y - tick.value * unit) < 0.01, 'ticks evenly spaced');
    return { top: top.value, unit, baseline: ticks[0]!.y };
  };
  const counted = scaleOf(drawn.countTicks);
  assert.ok(counted.top >= peak, `top tick ${counted.top} ≥ the busiest hour's ${peak}`);
  assert.ok(drawn.hourLabels.length >= 4 && drawn.hourLabels.every((label) => /^\d\d:00$/.test(label ?? '')));

  // One bucket per hour; each bar as tall as its count on that scale, failure at the bottom, success on it.
  assert.equal(drawn.buckets.length, 24);
  const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 0.01, `${what}: ${a} ≠ ${b}`);
  drawn.buckets.forEach((bar, i) => {
    const bucket = buckets[i]!;
    assert.equal(bar.start, bucket.start);
    assert.equal(bar.failure === null, bucket.failure === 0);
    assert.equal(bar.success === null, bucket.success === 0);
    if (bar.failure) {
      near(bar.failure.height, bucket.failure * counted.unit, `${bucket.start} failure height`);
      near(bar.failure.y + bar.failure.height, counted.baseline, 'failure on the axis');
    }
    if (bar.success) {
      near(bar.success.height, bucket.success * counted.unit, `${bucket.start} success height`);
      near(bar.success.y + bar.success.height, bar.failure ? bar.failure.y : counted.baseline, 'success stacked');
    }
  });
  assert.match(drawn.legend ?? '', new RegExp(`${stats.totals.success} succeeded.*${stats.totals.failure} failed`));
  assert.equal(drawn.legendSwatches, 2);

  // The duration chart: a point for p50 and one for p95 in each hour with attempts, at its value on the ms scale.
  const timed = scaleOf(drawn.latencyTicks);
  const timedBuckets = buckets.filter((b) => b.p50_ms !== null);
  assert.ok(timedBuckets.length >= 1);
  assert.ok(timed.top >= Math.max(...timedBuckets.map((b) => b.p95_ms!)));
  assert.ok(Math.max(...timedBuckets.map((b) => b.p95_ms!)) >= 180, 'the slowest answer took 180 ms');
  for (const name of ['p50', 'p95'] as const) {
    const points = drawn.points.filter((point) => point.class === `point point-${name}`);
    assert.deepEqual(
      points.map((point) => [point.start, point.ms]),
      timedBuckets.map((b) => [b.start, b[`${name}_ms`]]),
    );
    for (const point of points) near(point.cy, timed.baseline - point.ms * timed.unit, `${name} point height`);
    assert.ok(drawn.lines.includes(`line-${name}`));
  }
  assert.match(drawn.latencyKey ?? '', /p50.*p95/);

  // By event type: each hour's segments stacked from the axis, most attempts' type first, as tall as their counts.
  const typed = scaleOf(drawn.typeTicks);
  const typeBuckets: TypeBucket[] = appStats.buckets;
  assert.ok(typed.top >= Math.max(...typeBuckets.map((b) => b.success + b.failure)));
  assert.equal(drawn.typeBuckets.length, 24);
  assert.ok(drawn.typeHourLabels >= 4);
  drawn.typeBuckets.forEach((segments, i) => {
    const bucket = typeBuckets[i]!;
    assert.deepEqual(
      segments.map((segment) => [segment.type, segment.count]),
      bucket.event_types.map((type) => [type.event_type, type.success + type.failure]),
    );
    let base = typed.baseline;
    for (const segment of segments) {
      near(segment.height, segment.count * typed.unit, `${bucket.start} ${segment.type} height`);
      near(segment.y + segment.height, base, 'stacked');
      base = segment.y;
    }
  });
  assert.deepEqual(drawn.typeLegend, [
    { text: 'invoice.paid: 3 succeeded, 1 failed', swatch: 'swatch series-0' },
    { text: 'invoice.refunded: 1 succeeded, 1 failed', swatch: 'swatch series-1' },
    { text: 'customer.created: 1 succeeded, 0 failed', swatch: 'swatch series-2' },
  ]);
  assert.equal(drawn.styled, 0, 'no inline style');

  const shot = `${service.database.env.HERALD_DATA_DIR}/charts.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000, 'the screenshot is an image');
  assert.deepEqual([...readFileSync(shot).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
  if (process.env.SUITE_CHARTS_SCREENSHOT)
    await page.screenshot({ path: process.env.SUITE_CHARTS_SCREENSHOT, fullPage: true });
  assert.deepEqual(problems, []);
  assert.deepEqual(
    requests.filter((url) => !url.startsWith(service.url)),
    [],
    'no request leaves the service',
  );
});
