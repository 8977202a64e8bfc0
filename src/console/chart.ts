// The charts of attempts per hour, shared by the console and the portal: a same-origin script that builds
// plain SVG with the DOM, styled from the pages' stylesheets by class (no inline style, so the pages'
// strict Content-Security-Policy holds), every label inserted as text.
//
// `HeraldChart.draw(element, stats)` draws an endpoint's stats (GET /api/v1/endpoints/{id}/stats): success
// and failure stacked per hour on a count scale, then the hours' p50 and p95 attempt durations on a
// millisecond scale. `HeraldChart.drawByType(element, stats)` draws an application's stats (GET
// /api/v1/applications/{id}/stats): each hour's attempts stacked by event type. Every chart has a y axis
// whose ticks are round numbers (1, 2 or 5 × 10ⁿ apart, the top one at least the largest value), hour
// labels on the x axis (local time) and a legend.

/** Fill colours of an application chart's event types, most attempts first; `other` is grey. */
const SERIES_COLORS = [
  '#3b5bdb',
  '#f08c00',
  '#0ca678',
  '#d6336c',
  '#7048e8',
  '#1098ad',
  '#e8590c',
  '#74b816',
  '#ae3ec9',
  '#1c7ed6',
  '#37b24d',
  '#f03e3e',
  '#4263eb',
  '#fab005',
  '#20c997',
  '#cc5de8',
  '#5c940d',
  '#339af0',
  '#f783ac',
  '#845ef7',
];
const OTHER_COLOR = '#adb5bd';

const seriesCss = [
  ...SERIES_COLORS.map(
    (color, i) => `.chart .series-${i} { fill: ${color}; } .swatch.series-${i} { background: ${color}; }`,
  ),
  `.chart .series-other { fill: ${OTHER_COLOR}; } .swatch.series-other { background: ${OTHER_COLOR}; }`,
].join('\n');

export const CHART_CSS = `
.chart { display: block; width: 100%; max-width: 720px; height: auto; }
.chart .bar-success { fill: #2f9e44; } .chart .bar-failure { fill: #e03131; }
.chart .axis { stroke: #9aa3b8; stroke-width: 1; } .chart .grid { stroke: #e3e6ef; stroke-width: 1; }
.chart text { font-size: 10px; fill: #4a5568; } .chart .axis-title { font-size: 10px; fill: #6b7489; }
.chart .line-p50, .chart .line-p95 { fill: none; stroke-width: 1.5; }
.chart .line-p50 { stroke: #1c7ed6; } .chart .point-p50 { fill: #1c7ed6; }
.chart .line-p95 { stroke: #e8590c; } .chart .point-p95 { fill: #e8590c; }
.chart .bucket:hover rect { opacity: .8; }
.chart-legend, .chart-key { font-size: .85rem; color: #4a5568; margin: .2rem 0 .6rem; }
.chart-legend .legend-item, .chart-key .legend-item { display: inline-block; margin-right: 1rem; }
.swatch { display: inline-block; width: .7rem; height: .7rem; border-radius: 2px; margin-right: .3rem; vertical-align: -1px; }
.swatch.bar-success { background: #2f9e44; } .swatch.bar-failure { background: #e03131; }
.swatch.line-p50 { background: #1c7ed6; } .swatch.line-p95 { background: #e8590c; }
${seriesCss}
`;

export const CHART_JS = `
'use strict';
(function () {
  var SVG = 'http://www.w3.org/2000/svg';
  var WIDTH = 720, LEFT = 52, RIGHT = 12, TOP = 22, BOTTOM = 26;

  function node(tag, attributes, text) {
    var element = document.createElementNS(SVG, tag);
    Object.keys(attributes || {}).forEach(function (name) { element.setAttribute(name, String(attributes[name])); });
    if (text !== undefined) element.textContent = text;
    return element;
  }
  function html(tag, className, text) {
    var element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined) element.textContent = text;
    return element;
  }
  function pad(n) { return ('0' + n).slice(-2); }
  function hourLabel(iso, withDay) {
    var date = new Date(iso);
    var time = pad(date.getHours()) + ':00';
    return withDay ? pad(date.getMonth() + 1) + '-' + pad(date.getDate()) + ' ' + time : time;
  }
  function tooltip(parent, text) { parent.appendChild(node('title', {}, text)); }

  // The y scale from 0 to at least most: ticks 1, 2 or 5 × 10^n apart, at most five intervals, whole numbers.
  function niceScale(most) {
    var top = Math.max(1, most), step = niceStep(top), ticks = [];
    var max = Math.ceil(top / step) * step;
    for (var value = 0; value <= max; value += step) ticks.push(value);
    return { max: max, ticks: ticks };
  }
  function niceStep(top) {
    for (var power = 1; ; power *= 10)
      for (var i = 0; i < 3; i++) if (top / ([1, 2, 5][i] * power) <= 5) return [1, 2, 5][i] * power;
  }

  // Hours between two x labels: the smallest of these that leaves at most eight labels.
  function labelEvery(count) {
    var choices = [1, 2, 3, 4, 6, 12, 24, 48, 72, 96, 168];
    for (var i = 0; i < choices.length; i++) if (count / choices[i] <= 8) return choices[i];
    return choices[choices.length - 1];
  }

  // An SVG with a y axis (ticks from scale, labelled, with grid lines), a title over it, and the buckets'
  // hours on the x axis. Returns the SVG and where things go: x(i) the left edge of bucket i's slot, y(v)
  // the height of value v, baseline the y of 0.
  function frame(className, height, buckets, scale, axisTitle, summary) {
    var svg = node('svg', { viewBox: '0 0 ' + WIDTH + ' ' + height, class: 'chart ' + className, role: 'img' });
    tooltip(svg, summary);
    var baseline = height - BOTTOM, plot = baseline - TOP;
    var slot = (WIDTH - LEFT - RIGHT) / Math.max(1, buckets.length);
    function y(value) { return baseline - (value * plot) / scale.max; }
    function x(i) { return LEFT + i * slot; }
    var yAxis = node('g', { class: 'y-axis' });
    scale.ticks.forEach(function (value) {
      var tick = node('g', { class: 'tick' });
      tick.dataset.value = value;
      if (value > 0) tick.appendChild(node('line', { x1: LEFT, y1: y(value), x2: WIDTH - RIGHT, y2: y(value), class: 'grid' }));
      tick.appendChild(node('line', { x1: LEFT - 4, y1: y(value), x2: LEFT, y2: y(value), class: 'axis' }));
      tick.appendChild(node('text', { x: LEFT - 7, y: y(value) + 3.5, 'text-anchor': 'end', class: 'tick-label' }, String(value)));
      yAxis.appendChild(tick);
    });
    yAxis.appendChild(node('line', { x1: LEFT, y1: TOP, x2: LEFT, y2: baseline, class: 'axis' }));
    yAxis.appendChild(node('text', { x: LEFT, y: TOP - 10, class: 'axis-title' }, axisTitle));
    svg.appendChild(yAxis);
    var xAxis = node('g', { class: 'x-axis' });
    xAxis.appendChild(node('line', { x1: LEFT, y1: baseline, x2: WIDTH - RIGHT, y2: baseline, class: 'axis' }));
    var every = labelEvery(buckets.length), withDay = buckets.length > 24;
    buckets.forEach(function (bucket, i) {
      if (i % every !== 0) return;
      var middle = x(i) + slot / 2;
      xAxis.appendChild(node('line', { x1: middle, y1: baseline, x2: middle, y2: baseline + 4, class: 'axis' }));
      xAxis.appendChild(node('text', { x: middle, y: baseline + 15, 'text-anchor': 'middle', class: 'hour-label' }, hourLabel(bucket.start, withDay)));
    });
    svg.appendChild(xAxis);
    return { svg: svg, x: x, y: y, slot: slot, baseline: baseline };
  }

  // A rectangle from value low to value high in bucket i's slot.
  function bar(f, i, low, high, className) {
    return node('rect', { x: f.x(i) + 1, y: f.y(high), width: Math.max(1, f.slot - 2), height: f.y(low) - f.y(high), class: className });
  }

  function legend(className, items) {
    var box = html('div', className);
    items.forEach(function (item) {
      var entry = html('span', 'legend-item');
      entry.appendChild(html('span', 'swatch ' + item[0]));
      entry.appendChild(document.createTextNode(item[1]));
      box.appendChild(entry);
    });
    return box;
  }

  function total(counts) { return counts.success + counts.failure; }
  function most(buckets) { return buckets.reduce(function (m, b) { return Math.max(m, total(b)); }, 0); }

  // The p50 and p95 of each hour's attempt durations as two lines of points; hours without attempts leave gaps.
  function drawDurations(container, stats) {
    var buckets = stats.buckets;
    var slowest = buckets.reduce(function (m, b) { return Math.max(m, b.p95_ms || 0, b.p50_ms || 0); }, 0);
    var timed = buckets.filter(function (b) { return b.p50_ms !== null && b.p50_ms !== undefined; }).length;
    var f = frame('chart-latency', 150, buckets, niceScale(slowest), 'attempt duration (ms)',
      'Attempt duration per hour, p50 and p95 in ms' + (timed ? '; slowest p95: ' + slowest + ' ms' : ': no attempts'));
    ['p50', 'p95'].forEach(function (name) {
      var path = '', gap = true, points = node('g', { class: 'points-' + name });
      buckets.forEach(function (b, i) {
        var value = b[name + '_ms'];
        if (value === null || value === undefined) { gap = true; return; }
        var cx = f.x(i) + f.slot / 2, cy = f.y(value);
        path += (gap ? 'M' : 'L') + cx + ' ' + cy + ' ';
        gap = false;
        var point = node('circle', { cx: cx, cy: cy, r: 2.5, class: 'point point-' + name });
        point.dataset.start = b.start;
        point.dataset.ms = value;
        tooltip(point, hourLabel(b.start, buckets.length > 24) + ' · ' + name + ' ' + value + ' ms');
        points.appendChild(point);
      });
      if (path) f.svg.appendChild(node('path', { d: path.trim(), class: 'line-' + name }));
      f.svg.appendChild(points);
    });
    if (!timed) f.svg.appendChild(node('text', { x: WIDTH / 2, y: f.baseline / 2 + 10, 'text-anchor': 'middle', class: 'chart-empty' }, 'No attempts in this window'));
    container.appendChild(f.svg);
    container.appendChild(legend('chart-key', [
      ['line-p50', 'p50 (median) duration'],
      ['line-p95', 'p95 duration, per hour in ms'],
    ]));
  }

  // Draws an endpoint's stats ({since, buckets: [{start, success, failure, p50_ms, p95_ms}], totals}, oldest
  // bucket first) into container, replacing what was there.
  function draw(container, stats) {
    container.textContent = '';
    var buckets = stats.buckets, peak = most(buckets);
    var f = frame('chart-counts', 190, buckets, niceScale(peak), 'attempts per hour',
      'Attempts per hour: ' + stats.totals.success + ' succeeded, ' + stats.totals.failure + ' failed');
    buckets.forEach(function (b, i) {
      var group = node('g', { class: 'bucket' });
      group.dataset.start = b.start;
      group.dataset.success = b.success;
      group.dataset.failure = b.failure;
      tooltip(group, hourLabel(b.start, buckets.length > 24) + ' · ' + b.success + ' succeeded · ' + b.failure + ' failed' +
        (b.p50_ms === null || b.p50_ms === undefined ? '' : ' · p50 ' + b.p50_ms + ' ms · p95 ' + b.p95_ms + ' ms'));
      if (b.failure > 0) group.appendChild(bar(f, i, 0, b.failure, 'bar-failure'));
      if (b.success > 0) group.appendChild(bar(f, i, b.failure, b.failure + b.success, 'bar-success'));
      f.svg.appendChild(group);
    });
    container.appendChild(f.svg);
    var key = legend('chart-legend', [
      ['bar-success', stats.totals.success + ' succeeded'],
      ['bar-failure', stats.totals.failure + ' failed'],
    ]);
    key.appendChild(document.createTextNode('Attempts per hour since ' + new Date(stats.since).toLocaleString() + '; most in an hour: ' + peak + '.'));
    container.appendChild(key);
    if (buckets.some(function (b) { return 'p50_ms' in b; })) drawDurations(container, stats);
  }

  // Draws an application's stats ({event_types: [{event_type, success, failure}], other, buckets: [{start,
  // success, failure, event_types, other}], totals}) into container: each hour's attempts stacked by event
  // type, most attempts first from the bottom, the others as one grey "other".
  function drawByType(container, stats) {
    container.textContent = '';
    var series = stats.event_types.map(function (t, i) { return { name: t.event_type, className: 'series-' + i, counts: t }; });
    if (total(stats.other) > 0) series.push({ name: 'other', className: 'series-other', counts: stats.other, other: true });
    var buckets = stats.buckets, peak = most(buckets), withDay = buckets.length > 24;
    var f = frame('chart-types', 210, buckets, niceScale(peak), 'attempts per hour by event type',
      'Attempts per hour by event type: ' + stats.totals.success + ' succeeded, ' + stats.totals.failure + ' failed');
    buckets.forEach(function (b, i) {
      var group = node('g', { class: 'bucket' });
      group.dataset.start = b.start;
      group.dataset.total = total(b);
      var byName = {};
      b.event_types.forEach(function (t) { byName[t.event_type] = t; });
      var stacked = 0;
      series.forEach(function (s) {
        var counts = s.other ? b.other : byName[s.name];
        if (!counts || total(counts) === 0) return;
        var segment = bar(f, i, stacked, stacked + total(counts), 'segment ' + s.className);
        segment.dataset.eventType = s.name;
        segment.dataset.count = total(counts);
        tooltip(segment, hourLabel(b.start, withDay) + ' · ' + s.name + ': ' + counts.success + ' succeeded, ' + counts.failure + ' failed');
        group.appendChild(segment);
        stacked += total(counts);
      });
      f.svg.appendChild(group);
    });
    container.appendChild(f.svg);
    var key = legend('chart-legend', series.map(function (s) {
      return [s.className, s.name + ': ' + s.counts.success + ' succeeded, ' + s.counts.failure + ' failed'];
    }));
    if (series.length === 0) key.appendChild(document.createTextNode('No attempts in this window.'));
    container.appendChild(key);
  }

  window.HeraldChart = { draw: draw, drawByType: drawByType };
})();
`;
