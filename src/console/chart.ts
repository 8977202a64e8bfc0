// A bar chart of an endpoint's attempts per hour (success stacked on failure), shared by the console and the
// portal: a same-origin script that builds SVG elements with the DOM, styled from the pages' stylesheets
// (no inline style, so the pages' strict Content-Security-Policy holds), every label inserted as text.

export const CHART_CSS = `
.chart { display: block; width: 100%; max-width: 720px; height: 140px; }
.chart .bar-success { fill: #2f9e44; } .chart .bar-failure { fill: #e03131; }
.chart .axis { stroke: #9aa3b8; stroke-width: 1; } .chart text { font-size: 10px; fill: #4a5568; }
.chart-legend { font-size: .85rem; color: #4a5568; }
`;

export const CHART_JS = `
'use strict';
(function () {
  var SVG = 'http://www.w3.org/2000/svg';
  function node(tag, attributes) {
    var element = document.createElementNS(SVG, tag);
    Object.keys(attributes || {}).forEach(function (name) { element.setAttribute(name, String(attributes[name])); });
    return element;
  }
  function hourLabel(iso) {
    var date = new Date(iso);
    return ('0' + date.getHours()).slice(-2) + ':00';
  }
  // Draws stats.buckets ([{start, success, failure}], oldest first) into container, replacing what was there.
  function draw(container, stats) {
    container.textContent = '';
    var buckets = stats.buckets;
    var width = 720, height = 140, bottom = 18, top = 8;
    var peak = 0;
    buckets.forEach(function (b) { peak = Math.max(peak, b.success + b.failure); });
    var most = Math.max(1, peak);
    var slot = width / Math.max(1, buckets.length);
    var scale = (height - bottom - top) / most;
    var svg = node('svg', { viewBox: '0 0 ' + width + ' ' + height, class: 'chart', role: 'img' });
    var title = node('title');
    title.textContent = 'Attempts per hour: ' + stats.totals.success + ' succeeded, ' + stats.totals.failure + ' failed';
    svg.appendChild(title);
    buckets.forEach(function (b, i) {
      var x = i * slot + 1, w = Math.max(1, slot - 2);
      var failH = b.failure * scale, okH = b.success * scale;
      var group = node('g', { class: 'bucket' });
      group.dataset.start = b.start;
      var tip = node('title');
      tip.textContent = hourLabel(b.start) + ' · ' + b.success + ' succeeded · ' + b.failure + ' failed';
      group.appendChild(tip);
      if (b.failure > 0) group.appendChild(node('rect', { x: x, y: height - bottom - failH, width: w, height: failH, class: 'bar-failure' }));
      if (b.success > 0) group.appendChild(node('rect', { x: x, y: height - bottom - failH - okH, width: w, height: okH, class: 'bar-success' }));
      if (i % 6 === 0) {
        var label = node('text', { x: x, y: height - 4 });
        label.textContent = hourLabel(b.start);
        group.appendChild(label);
      }
      svg.appendChild(group);
    });
    svg.appendChild(node('line', { x1: 0, y1: height - bottom, x2: width, y2: height - bottom, class: 'axis' }));
    container.appendChild(svg);
    var legend = document.createElement('div');
    legend.className = 'chart-legend';
    legend.textContent = 'Attempts per hour since ' + new Date(stats.since).toLocaleString() + ': ' +
      stats.totals.success + ' succeeded (green), ' + stats.totals.failure + ' failed (red); most in an hour: ' + most + '.';
    container.appendChild(legend);
  }
  window.HeraldChart = { draw: draw };
})();
`;
