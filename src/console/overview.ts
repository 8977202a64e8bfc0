// The console's overview, the view it opens on (part of the console's script, src/console/script.ts): what
// needs a person first. Endpoints failing or disabled, open circuits, deliveries failed in the last hour
// and day with the endpoints they failed at, and the busiest event types; each a link into the filtered
// view. With nothing yet, it says what to do first.

export const OVERVIEW_JS = `
  var HOUR_MS = 3600000;
  function since(ms) { return new Date(Date.now() - ms).toISOString(); }
  // "12" or "250+" when the page was full.
  function counted(page) { return page.data.length + (page.has_more ? '+' : ''); }
  function overviewList(selector, items, empty, render) {
    var box = clear(selector);
    if (items.length === 0) { box.appendChild(el('p', empty, 'none')); return; }
    var list = box.appendChild(el('ul'));
    items.forEach(function (item) { render(list.appendChild(el('li')), item); });
  }
  // The keys of a tally, largest count first, at most five.
  function top(tally) {
    return Object.keys(tally).sort(function (a, b) { return tally[b] - tally[a]; }).slice(0, 5);
  }

  function loadOverview() {
    var day = since(24 * HOUR_MS);
    var hour = since(HOUR_MS);
    return Promise.all([
      loadApplications(),
      call('GET', 'endpoints?limit=250'),
      call('GET', 'deliveries?status=failed&limit=250&since=' + encodeURIComponent(day)),
      call('GET', 'deliveries?status=failed&limit=250&since=' + encodeURIComponent(hour)),
      call('GET', 'deliveries?limit=250&since=' + encodeURIComponent(day)),
    ]).then(function (all) {
      var endpoints = all[1].data;
      endpoints.forEach(function (endpoint) { endpointsById[endpoint.id] = endpoint; });
      var start = clear('#overview-start');
      if (Object.keys(apps).length === 0) {
        start.appendChild(el('p', 'Nothing here yet. Create an application first, then add an endpoint to it and emit a message.'));
        start.appendChild(link('Create an application', href('applications')));
      } else if (endpoints.length === 0) {
        start.appendChild(el('p', 'No endpoints yet: open an application and add one, or add one on the Endpoints tab.'));
        start.appendChild(link('Add an endpoint', href('endpoints')));
      }

      // Disabled first, then failing: what no longer receives anything before what still might.
      var rank = { disabled: 0, failing: 1 };
      var troubled = endpoints.filter(function (endpoint) { return endpoint.status !== 'active'; })
        .sort(function (a, b) { return rank[a.status] - rank[b.status]; });
      overviewList('#overview-endpoints', troubled, 'Every endpoint is active.', function (item, endpoint) {
        item.dataset.endpointId = endpoint.id;
        item.appendChild(el('span', endpoint.status, 'status-' + endpoint.status));
        item.appendChild(document.createTextNode(' '));
        item.appendChild(link(endpoint.url, href('endpoints', endpoint.id)));
        item.appendChild(document.createTextNode(' · ' + appName(endpoint.app_id)));
      });
      var open = endpoints.filter(function (endpoint) { return endpoint.circuit_state && endpoint.circuit_state !== 'closed'; });
      overviewList('#overview-circuits', open, 'No circuit is open.', function (item, endpoint) {
        item.dataset.endpointId = endpoint.id;
        item.appendChild(link(endpoint.url, href('endpoints', endpoint.id)));
        item.appendChild(document.createTextNode(' · ' + endpoint.circuit_state + (endpoint.circuit_open_until ? ' until ' + when(endpoint.circuit_open_until) : '')));
      });

      var failedDay = all[2];
      var failedHour = all[3];
      var counts = clear('#overview-failed');
      [['Last hour', failedHour, hour], ['Last 24 hours', failedDay, day]].forEach(function (row) {
        var line = counts.appendChild(el('p'));
        line.appendChild(document.createTextNode(row[0] + ': '));
        var a = link(counted(row[1]) + ' failed', href('deliveries', null, { status: 'failed', since: row[2] }));
        a.className = 'failed-count';
        line.appendChild(a);
      });
      var byEndpoint = {};
      failedDay.data.forEach(function (delivery) { byEndpoint[delivery.endpoint_id] = (byEndpoint[delivery.endpoint_id] || 0) + 1; });
      overviewList('#overview-failed-endpoints', top(byEndpoint), 'No delivery failed in the last 24 hours.', function (item, id) {
        item.dataset.endpointId = id;
        var endpoint = endpointsById[id];
        item.appendChild(link(byEndpoint[id] + ' at ' + (endpoint ? endpoint.url : id), href('deliveries', null, { status: 'failed', endpoint_id: id, since: day })));
      });

      var byType = {};
      all[4].data.forEach(function (delivery) { if (delivery.event_type) byType[delivery.event_type] = (byType[delivery.event_type] || 0) + 1; });
      overviewList('#overview-event-types', top(byType), 'No deliveries in the last 24 hours.', function (item, name) {
        item.dataset.eventType = name;
        item.appendChild(link(name, href('deliveries', null, { event_type: name, since: day })));
        item.appendChild(document.createTextNode(' · ' + byType[name] + ' deliveries'));
      });
    });
  }
`;
