// The portal page: static HTML, CSS and a small script that renders from the portal's JSON routes.
// No framework and no build step; everything user-supplied is inserted as text, never as HTML.

import { CHART_CSS } from '../console/chart.js';
import { ANSWERS_CSS, ANSWERS_JS } from '../console/answers.js';
import { DOM_HELPERS_CSS, DOM_HELPERS_JS } from '../console/dom-helpers.js';
import { FILTER_CSS, FILTER_EDITOR_JS } from '../console/filter-editor.js';
import { TRANSFORMATION_CSS, TRANSFORMATION_EDITOR_JS } from '../console/transformation-editor.js';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function portalHtml(appName: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Webhooks · ${escapeHtml(appName)}</title>
<link rel="icon" type="image/svg+xml" href="/favicon.svg">
<link rel="stylesheet" href="/portal-assets/portal.css">
</head>
<body>
<header><h1>Webhooks for <span id="app-name">${escapeHtml(appName)}</span></h1><span id="mode" class="badge"></span></header>
<main>
  <p id="notice" role="status" hidden></p>
  <section>
    <h2>Endpoints</h2>
    <table id="endpoints" class="compact"><thead><tr><th>URL</th><th>Status</th><th>Success, last 24 h</th><th>Event types</th><th></th></tr></thead><tbody></tbody></table>
    <div id="endpoints-more"></div>
  </section>
  <section id="endpoint-section" hidden>
    <h2>Endpoint <code id="endpoint-of"></code></h2>
    <p id="endpoint-health"></p>
    <h3>Attempts per hour, last 24 h</h3>
    <div id="stats-chart"></div>
  </section>
  <section id="add-endpoint-section">
    <form id="add-endpoint">
      <h2>Add an endpoint</h2>
      <label>URL <input name="url" required placeholder="https://example.com/webhooks or a broker's address"></label>
      <label>Description <input name="description" maxlength="1024"></label>
      <fieldset id="event-type-choices"><legend>Event types (none selected: all)</legend></fieldset>
      <button type="submit">Add endpoint</button>
    </form>
  </section>
  <section id="send-test-section">
    <h2>Send a test event</h2>
    <form id="send-test"><select name="event_type" id="test-event-type"></select> <button type="submit">Send test event</button></form>
  </section>
  <section>
    <h2>Recent messages</h2>
    <table id="messages" class="compact"><thead><tr><th>Event type</th><th>Created</th><th>Delivered</th><th>Message</th><th></th></tr></thead><tbody></tbody></table>
    <div id="messages-more"></div>
  </section>
  <section id="deliveries-section" hidden>
    <h2>Deliveries of <code id="deliveries-of"></code></h2>
    <div id="deliveries"></div>
  </section>
</main>
<script src="/portal-assets/chart.js"></script>
<script src="/portal-assets/receiver-settings.js"></script>
<script src="/portal-assets/destination-settings.js"></script>
<script src="/portal-assets/portal.js"></script>
</body>
</html>`;
}

export const PORTAL_CSS = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d2433; background: #f6f7fb; }
header { display: flex; align-items: center; gap: 1rem; padding: 1rem 2rem; background: #1d2433; color: #fff; }
header h1 { font-size: 1.2rem; margin: 0; }
.badge { padding: .1rem .5rem; border-radius: 1rem; font-size: .8rem; background: #ffd166; color: #1d2433; }
main { max-width: 1100px; margin: 0 auto; padding: 1rem 2rem 3rem; }
section { background: #fff; border: 1px solid #e3e6ef; border-radius: 8px; padding: 1rem 1.25rem; margin-top: 1rem; }
h2 { font-size: 1.05rem; margin-top: 0; } h3 { font-size: .95rem; }
table { width: 100%; border-collapse: collapse; } th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #eef0f5; vertical-align: top; }
td code, code { font-size: .85rem; word-break: break-all; }
label { display: block; margin: .4rem 0; } input[type=url], input[name=url], input[name=description] { width: 100%; max-width: 520px; padding: .3rem; }
fieldset { border: 1px solid #e3e6ef; margin: .5rem 0; } fieldset label { display: inline-block; margin-right: 1rem; }
button { cursor: pointer; padding: .3rem .7rem; border-radius: 5px; border: 1px solid #9aa3b8; background: #fff; margin: 0 .3rem .3rem 0; }
button[type=submit] { background: #3559e0; color: #fff; border-color: #3559e0; }
code.url { overflow-wrap: normal; word-break: normal; } a.open-endpoint { color: inherit; }
#endpoint-health { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; } .delivered .mark { margin-right: .4rem; white-space: nowrap; }
.status-active, .status-success { color: #147a3d; } .status-failing, .status-pending { color: #a15c00; } .status-disabled, .status-failed { color: #b42318; }
#notice { padding: .6rem .8rem; background: #eef4ff; border: 1px solid #b8ccff; border-radius: 6px; white-space: pre-wrap; }
#notice.error { background: #fff1f0; border-color: #ffb4ab; }
.delivery { border-top: 1px solid #eef0f5; padding: .5rem 0; } .attempts { font-size: .85rem; color: #4a5568; margin: .3rem 0 0 1rem; }
.delivery-head .event-type { font-weight: 600; } .delivery-ids { font-size: .8rem; color: #4a5568; margin: .2rem 0 0 1rem; }
${DOM_HELPERS_CSS}
${ANSWERS_CSS}
${FILTER_CSS}
${TRANSFORMATION_CSS}
${CHART_CSS}`;

export const PORTAL_JS = `
'use strict';
(function () {
  var base = location.pathname.replace(/\\/$/, '') + '/api/';
  var notice = document.getElementById('notice');
  var endpointsById = {};

  // The notice under the header: what the page could not load. An action's answer is said beside it.
  function show(text, isError) {
    notice.textContent = text;
    notice.className = isError ? 'error' : '';
    notice.hidden = false;
  }

  // A call to a portal route; resolves with {status, data}.
  function request(method, path, body) {
    var init = { method: method, headers: {} };
    if (body !== undefined) { init.headers['content-type'] = 'application/json'; init.body = JSON.stringify(body); }
    return fetch(base + path, init).then(function (response) {
      return response.json().then(function (data) { return { status: response.status, data: data }; }, function () {
        return { status: response.status, data: null };
      });
    });
  }
  function call(method, path, body) {
    return request(method, path, body).then(function (reply) {
      if (reply.status >= 400) throw new Error((reply.data && reply.data.error && reply.data.error.message) || ('HTTP ' + reply.status));
      return reply.data;
    });
  }

${DOM_HELPERS_JS}
${FILTER_EDITOR_JS}
${TRANSFORMATION_EDITOR_JS}
${ANSWERS_JS}
  function fail(error) { show(error.message, true); }
  function failNear(container) { return function (error) { note(container, error.message, true); }; }

  // The endpoint's row again after a change, and the cell where the change is said.
  function reloadThenSay(endpoint, text) {
    return loadEndpoints().then(function () {
      var cell = document.querySelector('#endpoints tbody tr[data-endpoint-id="' + endpoint.id + '"] td:first-child');
      if (cell) note(cell, text);
    });
  }

  // The endpoint pages shown: a reload after a change reads as many again, so the changed row stays in view.
  var endpointPages = 1;
  function loadEndpoints() {
    var body = document.querySelector('#endpoints tbody');
    var more = document.getElementById('endpoints-more');
    function read(cursor, n) {
      return call('GET', 'endpoints' + (cursor ? '?cursor=' + encodeURIComponent(cursor) : '')).then(function (page) {
        if (!cursor) body.textContent = '';
        page.data.forEach(function (endpoint) { body.appendChild(endpointRow(endpoint)); });
        if (page.has_more && n < endpointPages) return read(page.next_cursor, n + 1);
        more.textContent = '';
        if (page.has_more) more.appendChild(button('More endpoints', function () {
          endpointPages = n + 1;
          read(page.next_cursor, n + 1).catch(failNear(more));
        }));
      });
    }
    return read(null, 1);
  }

  // Shown only once there is code: most endpoints have none, and the row says so by saying nothing.
  function transformationText(transformation) {
    if (!transformation || transformation.code === null) return '';
    return 'Transformation ' + (transformation.enabled ? 'on' : 'off') + ', changed ' + new Date(transformation.updated_at).toLocaleString();
  }

  // A URL that wraps after its separators (/ . ? & = -), never inside a word.
  function wrappedUrl(url) {
    var code = el('code', null, 'url');
    url.split(/(?<=[/.?&=-])/).forEach(function (part, i) {
      if (i > 0) code.appendChild(document.createElement('wbr'));
      code.appendChild(document.createTextNode(part));
    });
    return code;
  }
  // The rows' success ratios, read one after another (each row's stats route once).
  var ratios = Promise.resolve();

  function endpointRow(endpoint) {
    endpointsById[endpoint.id] = endpoint;
    var row = el('tr');
    row.dataset.endpointId = endpoint.id;
    var url = el('td');
    var open = url.appendChild(link('', '#endpoint-section', 'open-endpoint'));
    open.appendChild(wrappedUrl(endpoint.url));
    open.addEventListener('click', function (event) { event.preventDefault(); openEndpoint(endpoint).catch(failNear(url)); });
    if (endpoint.description) url.appendChild(el('div', endpoint.description));
    var names = Object.keys(endpoint.headers);
    if (endpoint.ordering === 'fifo') url.appendChild(el('div', 'Delivered in order, one at a time (FIFO)', 'ordering'));
    if (endpoint.rate_limit !== null) url.appendChild(el('div', 'At most ' + endpoint.rate_limit + ' requests a second', 'rate-limit'));
    if (endpoint.circuit_state !== 'closed') url.appendChild(el('div', endpoint.circuit_state === 'open' ? 'Paused after repeated failures until ' + new Date(endpoint.circuit_open_until).toLocaleString() + ': deliveries wait, then one is tried' : 'Trying one delivery to see whether it is back', 'circuit'));
    if (endpoint.retry_schedule) url.appendChild(el('div', 'Retried after ' + endpoint.retry_schedule.join(', ') + ' (' + endpoint.retry_schedule.length + ' attempts at most)', 'retry-schedule'));
    if (names.length) url.appendChild(el('div', 'Headers: ' + names.map(function (name) { return name + ': ' + endpoint.headers[name]; }).join(', '), 'headers'));
    if (endpoint.filter) url.appendChild(el('div', 'Filter: ' + JSON.stringify(endpoint.filter), 'filter'));
    url.appendChild(el('div', transformationText(endpoint.transformation), 'transformation'));
    if (endpoint.tls && endpoint.tls.client_cert_not_after) url.appendChild(el('div', 'Client certificate until ' + new Date(endpoint.tls.client_cert_not_after).toLocaleDateString(), 'tls'));
    if (endpoint.auth) url.appendChild(el('div', 'OAuth2 token from ' + endpoint.auth.token_url, 'auth'));
    row.appendChild(url);
    row.appendChild(el('td', endpoint.status, 'status-' + endpoint.status));
    var success = row.appendChild(el('td', '…', 'ratio'));
    ratios = ratios.then(function () {
      return call('GET', 'endpoints/' + endpoint.id + '/stats').then(function (stats) {
        success.textContent = successRatio(stats.totals);
      }, function () { success.textContent = '—'; });
    });
    row.appendChild(el('td', endpoint.event_types.length ? endpoint.event_types.join(', ') : 'all'));
    var actions = el('td', null, 'actions');
    var next = endpoint.status === 'disabled' ? 'active' : 'disabled';
    function setStatus() {
      call('PATCH', 'endpoints/' + endpoint.id, { status: next }).then(function (updated) {
        return reloadThenSay(endpoint, 'Endpoint ' + (updated.status === 'disabled' ? 'disabled.' : 'enabled.'));
      }).catch(failNear(url));
    }
    actions.appendChild(actionsMenu([
      button('Open', function () { openEndpoint(endpoint).catch(failNear(url)); }),
      button(next === 'disabled' ? 'Disable' : 'Enable', next === 'disabled'
        ? confirmed('Disable ' + endpoint.url + '? It gets no deliveries until it is enabled again.', setStatus) : setStatus),
      button('Edit headers', function () { editHeaders(url, endpoint); }),
      button('Delivery', function () { editDelivery(url, endpoint); }),
      button('Filter', function () {
        if (url.querySelector('.filter-form')) return;
        url.appendChild(filterEditor(endpoint, function (filter) {
          return call('PATCH', 'endpoints/' + endpoint.id, { filter: filter }).then(function (saved) {
            var shown = url.querySelector('.filter') || url.insertBefore(el('div', null, 'filter'), url.querySelector('.filter-form'));
            shown.textContent = saved.filter ? 'Filter: ' + JSON.stringify(saved.filter) : '';
          });
        }, function (body) { return call('POST', 'endpoints/' + endpoint.id + '/filter-test', body); }));
      }),
      button('Transformation', function () {
        if (url.querySelector('.transformation-form')) return;
        url.appendChild(transformationEditor(endpoint, function (transformation) {
          return call('PATCH', 'endpoints/' + endpoint.id, { transformation: transformation }).then(function (saved) {
            endpointsById[endpoint.id] = saved;
            url.querySelector('.transformation').textContent = transformationText(saved.transformation);
          });
        }, function (body) { return call('POST', 'endpoints/' + endpoint.id + '/transformation/simulate', body); }));
      }),
      button(endpoint.type !== 'http' ? 'Destination settings' : 'Receiver security', function () { editReceiverSettings(url, endpoint); }),
      endpoint.status !== 'disabled' ? button('Recover', function () { recover(url, endpoint); }) : null,
      button('Rotate secret', confirmed('Rotate the signing secret of ' + endpoint.url + '? The previous one keeps working for a while; give your receiver the new one.', function () {
        call('POST', 'endpoints/' + endpoint.id + '/rotate-secret').then(function (result) {
          note(url, (result.public_key ? 'New public key: ' + result.public_key : 'New signing secret (shown once): ' + result.signing_secret) + '\\nThe previous one keeps working until ' + result.previous_valid_until + '.');
        }).catch(failNear(url));
      })),
    ]));
    row.appendChild(actions);
    return row;
  }

  // An endpoint's page: its status, success and attempts per hour over the last 24 hours (chart.js), drawn
  // as it opens.
  function openEndpoint(endpoint) {
    var section = document.getElementById('endpoint-section');
    document.getElementById('endpoint-of').textContent = endpoint.url;
    var health = document.getElementById('endpoint-health');
    health.textContent = '';
    health.appendChild(el('span', endpoint.status, 'status-' + endpoint.status));
    if (endpoint.description) health.appendChild(el('span', endpoint.description));
    health.appendChild(el('span', endpoint.event_types.length ? 'Event types: ' + endpoint.event_types.join(', ') : 'Every event type'));
    var ratio = health.appendChild(el('span', '…', 'ratio'));
    section.hidden = false;
    return call('GET', 'endpoints/' + endpoint.id + '/stats').then(function (stats) {
      ratio.textContent = successRatio(stats.totals) + ' succeeded, last 24 h';
      window.HeraldChart.draw(document.getElementById('stats-chart'), stats);
      section.scrollIntoView({ block: 'nearest' });
    });
  }

  // Headers as lines of "Name: value"; a credential shows as <redacted>, and left so it keeps its value.
  function editHeaders(cell, endpoint) {
    if (cell.querySelector('.headers-form')) return;
    var form = el('form', null, 'headers-form');
    var text = el('textarea');
    text.rows = 4;
    text.value = Object.keys(endpoint.headers).map(function (name) { return name + ': ' + endpoint.headers[name]; }).join('\\n');
    form.appendChild(text);
    var save = el('button', 'Save headers');
    save.type = 'submit';
    form.appendChild(save);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var headers = {};
      text.value.split('\\n').forEach(function (line) {
        var at = line.indexOf(':');
        if (line.trim() && at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      });
      call('PATCH', 'endpoints/' + endpoint.id, { headers: headers }).then(function () {
        return reloadThenSay(endpoint, 'Headers saved.');
      }).catch(failNear(form));
    });
    cell.appendChild(form);
  }

  // Mutual TLS and OAuth2 client credentials (receiver-settings.js builds the form); a destination's URL
  // and config instead (destination-settings.js).
  function editReceiverSettings(cell, endpoint) {
    if (cell.querySelector('.receiver-settings-form, .destination-settings-form')) return;
    var save = function (saved) {
      return function (body) {
        call('PATCH', 'endpoints/' + endpoint.id, body).then(function () {
          return reloadThenSay(endpoint, saved);
        }).catch(failNear(form));
      };
    };
    var form = endpoint.type !== 'http'
      ? window.HeraldDestinations.editor(endpoint, save('Destination saved.'))
      : window.HeraldReceiverSettings.form(endpoint, save('Receiver settings saved.'));
    cell.appendChild(form);
  }

  // How the endpoint is sent to: the most requests a second (empty: no limit) and the delay before each
  // attempt (empty: the service's schedule).
  function editDelivery(cell, endpoint) {
    if (cell.querySelector('.delivery-form')) return;
    var form = el('form', null, 'delivery-form');
    var rate = el('input');
    rate.type = 'number'; rate.min = '1'; rate.max = '10000'; rate.name = 'rate_limit';
    rate.value = endpoint.rate_limit === null ? '' : String(endpoint.rate_limit);
    var rateLabel = el('label', 'Requests a second at most (empty: no limit) ');
    rateLabel.appendChild(rate);
    form.appendChild(rateLabel);
    var schedule = el('input');
    schedule.name = 'retry_schedule'; schedule.placeholder = '0s, 30s, 5m, 2h';
    schedule.value = endpoint.retry_schedule ? endpoint.retry_schedule.join(', ') : '';
    var scheduleLabel = el('label', 'Delay before each attempt, comma-separated (empty: the default schedule) ');
    scheduleLabel.appendChild(schedule);
    form.appendChild(scheduleLabel);
    var breaker = el('input');
    breaker.type = 'checkbox'; breaker.name = 'circuit';
    breaker.checked = !(endpoint.circuit && endpoint.circuit.enabled === false);
    var breakerLabel = el('label');
    breakerLabel.appendChild(breaker);
    breakerLabel.appendChild(document.createTextNode(' Pause after repeated failures (circuit breaker)'));
    form.appendChild(breakerLabel);
    var save = el('button', 'Save delivery settings');
    save.type = 'submit';
    form.appendChild(save);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var steps = schedule.value.split(',').map(function (step) { return step.trim(); }).filter(Boolean);
      call('PATCH', 'endpoints/' + endpoint.id, {
        rate_limit: rate.value.trim() === '' ? null : Number(rate.value),
        retry_schedule: steps.length ? steps : null,
        circuit: breaker.checked ? (endpoint.circuit && endpoint.circuit.enabled !== false ? endpoint.circuit : null) : { enabled: false },
      }).then(function () {
        return reloadThenSay(endpoint, 'Delivery settings saved.');
      }).catch(failNear(form));
    });
    cell.appendChild(form);
  }

  // Every failed delivery of messages since a time gets a new attempt, in the background, once confirmed.
  function recover(cell, endpoint) {
    if (cell.querySelector('.recover-form')) return;
    var form = el('form', null, 'recover-form');
    form.appendChild(el('label', 'Since '));
    var since = el('input');
    since.type = 'datetime-local'; since.name = 'since';
    since.value = new Date(Date.now() - 86400000 - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16);
    form.appendChild(since);
    var go = el('button', 'Recover failed deliveries');
    go.type = 'submit';
    form.appendChild(go);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var from = new Date(since.value);
      if (!window.confirm('Send every failed delivery since ' + from.toLocaleString() + ' again?')) return;
      call('POST', 'endpoints/' + endpoint.id + '/recover', { since: from.toISOString() }).then(function (task) {
        note(form, 'Recovery started (' + task.id + '): failed deliveries since then get a new attempt.');
        go.disabled = true;
      }).catch(failNear(form));
    });
    cell.appendChild(form);
  }

  // The application's messages, newest first, 50 a page ("More messages" reads the next).
  // How a message went: one mark per endpoint (its URL on hover), failures first.
  var ORDER = { failed: 0, disabled: 1, pending: 2, success: 3 };
  function deliveredCell(deliveries) {
    var td = el('td', null, 'delivered');
    if (deliveries.length === 0) { td.textContent = 'no endpoint'; return td; }
    deliveries.slice().sort(function (a, b) { return ORDER[a.status] - ORDER[b.status]; }).forEach(function (delivery) {
      var mark = el('span', delivery.status, 'mark status-' + delivery.status);
      var endpoint = endpointsById[delivery.endpoint_id];
      mark.title = endpoint ? endpoint.url : delivery.endpoint_id;
      mark.dataset.endpointId = delivery.endpoint_id;
      td.appendChild(mark);
    });
    return td;
  }

  function loadMessages(cursor) {
    return call('GET', 'messages' + (cursor ? '?cursor=' + encodeURIComponent(cursor) : '')).then(function (page) {
      var body = document.querySelector('#messages tbody');
      if (!cursor) body.textContent = '';
      var more = document.getElementById('messages-more');
      more.textContent = '';
      if (page.has_more) {
        more.appendChild(button('More messages', function () { loadMessages(page.next_cursor).catch(failNear(more)); }));
      }
      page.data.forEach(function (message) {
        var row = el('tr');
        row.dataset.messageId = message.id;
        row.appendChild(el('td', message.event_type, 'event-type'));
        row.appendChild(el('td')).appendChild(ageCell(message.created_at));
        row.appendChild(deliveredCell(message.deliveries || []));
        row.appendChild(el('td')).appendChild(idWithCopy(message.id));
        var actions = el('td');
        actions.appendChild(button('Deliveries', function () { loadDeliveries(message.id).catch(failNear(actions)); }));
        row.appendChild(actions);
        body.appendChild(row);
      });
    });
  }

  // A delivery as a person reads it: event type, endpoint, status, attempts and age first; its ids, its
  // latest attempts (newest first), a Retry, and its payload and the receiver's answers on demand.
  function deliveryItem(delivery, messageId) {
    var item = el('div', null, 'delivery');
    item.dataset.deliveryId = delivery.id;
    var endpoint = endpointsById[delivery.endpoint_id];
    var head = el('div', null, 'delivery-head');
    deliverySentence(head, delivery, el('span', endpoint ? endpoint.url + (endpoint.description ? ' (' + endpoint.description + ')' : '') : delivery.endpoint_id, 'endpoint'));
    head.appendChild(button('Retry', function () {
      call('POST', 'deliveries/' + delivery.id + '/retry').then(function (result) {
        note(item, 'Retry queued as attempt ' + result.attempt_number + '.');
        setTimeout(function () { loadDeliveries(messageId).catch(failNear(item)); }, 700);
      }).catch(failNear(item));
    }));
    item.appendChild(head);
    var ids = el('div', null, 'delivery-ids');
    ids.appendChild(document.createTextNode('Delivery '));
    ids.appendChild(idWithCopy(delivery.id));
    ids.appendChild(document.createTextNode(' · endpoint '));
    ids.appendChild(idWithCopy(delivery.endpoint_id));
    item.appendChild(ids);
    item.appendChild(attemptsTable(delivery.attempts));
    item.appendChild(answersControl(function () {
      return request('GET', 'messages/' + delivery.message_id + '/payload').then(function (reply) {
        if (reply.status === 410) return null;
        if (reply.status >= 400) throw new Error((reply.data && reply.data.error && reply.data.error.message) || ('HTTP ' + reply.status));
        return reply.data;
      });
    }, function () { return call('GET', 'deliveries/' + delivery.id); }));
    return item;
  }

  function loadDeliveries(messageId, cursor) {
    var path = 'messages/' + messageId + '/deliveries' + (cursor ? '?cursor=' + encodeURIComponent(cursor) : '');
    return call('GET', path).then(function (page) {
      var section = document.getElementById('deliveries-section');
      section.hidden = false;
      document.getElementById('deliveries-of').textContent = messageId;
      var box = document.getElementById('deliveries');
      var more = box.querySelector('.more');
      if (more) more.remove();
      if (!cursor) box.textContent = '';
      if (!cursor && page.data.length === 0) box.appendChild(el('p', 'No endpoint was subscribed to this message.'));
      page.data.forEach(function (delivery) { box.appendChild(deliveryItem(delivery, messageId)); });
      if (page.has_more) {
        var next = button('More deliveries', function () { loadDeliveries(messageId, page.next_cursor).catch(failNear(box)); });
        next.classList.add('more');
        box.appendChild(next);
      }
      if (!cursor) section.scrollIntoView({ block: 'start' });
    });
  }

  var addEndpoint = document.getElementById('add-endpoint');
  var chosenDestination = window.HeraldDestinations.typeChooser(addEndpoint, document.getElementById('event-type-choices'));
  addEndpoint.addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var chosen = Array.prototype.map.call(form.querySelectorAll('input[name=event_type]:checked'), function (box) { return box.value; });
    var body = Object.assign({ url: form.url.value, event_types: chosen }, chosenDestination());
    if (form.description.value) body.description = form.description.value;
    call('POST', 'endpoints', body).then(function (endpoint) {
      form.reset();
      return loadEndpoints().then(function () {
        note(form, 'Endpoint added. Its signing secret (shown once): ' + endpoint.signing_secret);
      });
    }).catch(failNear(form));
  });

  document.getElementById('send-test').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    call('POST', 'send-test', { event_type: document.getElementById('test-event-type').value }).then(function (result) {
      note(form, 'Test event ' + result.id + ' sent to ' + result.delivery_ids.length + ' endpoint(s).');
      return loadMessages();
    }).catch(failNear(form));
  });

  call('GET', 'app').then(function (app) {
    document.getElementById('mode').textContent = app.livemode ? 'Live' : 'Test';
    document.getElementById('send-test-section').hidden = app.livemode;
    var choices = document.getElementById('event-type-choices');
    var select = document.getElementById('test-event-type');
    app.event_types.forEach(function (type) {
      var label = el('label');
      var box = document.createElement('input');
      box.type = 'checkbox'; box.name = 'event_type'; box.value = type.name;
      label.appendChild(box);
      label.appendChild(document.createTextNode(' ' + type.name));
      choices.appendChild(label);
      var option = el('option', type.name);
      option.value = type.name;
      option.selected = type.name === 'invoice.paid';
      select.appendChild(option);
    });
    // The endpoints first: the messages' delivery marks name their endpoints' URLs.
    return loadEndpoints().then(function () { return loadMessages(); });
  }).catch(fail);
})();
`;
