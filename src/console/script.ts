// The console's script (served as /console-assets/console.js). It calls /api/v1 with the key kept in
// sessionStorage, renders every value with textContent, and adds no inline handlers: the page's
// Content-Security-Policy allows scripts from this origin only.

import { DOM_HELPERS_JS } from './dom-helpers.js';
import { FILTER_EDITOR_JS } from './filter-editor.js';

export const CONSOLE_JS = `
'use strict';
(function () {
  var KEY = 'herald.console.key';
  var notice = document.getElementById('notice');
  var apps = {};

  function show(text, isError) {
    notice.textContent = text;
    notice.className = isError ? 'error' : '';
    notice.hidden = false;
  }
  function fail(error) { show(error.message, true); }

  function key() { return sessionStorage.getItem(KEY); }

  // A call to the API with the key; resolves with {status, data}; rejects with the error envelope's message.
  function request(method, path, body) {
    var init = { method: method, headers: { authorization: 'Bearer ' + key() }, cache: 'no-store' };
    if (body !== undefined) { init.headers['content-type'] = 'application/json'; init.body = JSON.stringify(body); }
    return fetch('/api/v1/' + path, init).then(function (response) {
      if (response.status === 204) return { status: 204, data: null };
      return response.json().then(function (data) { return { status: response.status, data: data }; }, function () {
        return { status: response.status, data: null };
      });
    });
  }
  function call(method, path, body) {
    return request(method, path, body).then(function (reply) {
      if (reply.status === 401) { signOut(); throw new Error('The API key was refused: sign in again.'); }
      if (reply.status >= 400) throw new Error((reply.data && reply.data.error && reply.data.error.message) || ('HTTP ' + reply.status));
      return reply.data;
    });
  }

${DOM_HELPERS_JS}
${FILTER_EDITOR_JS}
  function cell(row, text, className) { var td = el('td', text, className); row.appendChild(td); return td; }
  function codeCell(row, text) { var td = el('td'); td.appendChild(el('code', text)); row.appendChild(td); return td; }
  function when(iso) { return iso ? new Date(iso).toLocaleString() : '—'; }
  function clear(selector) { var node = document.querySelector(selector); node.textContent = ''; return node; }
  function query(params) {
    var parts = Object.keys(params).filter(function (name) { return params[name]; }).map(function (name) {
      return encodeURIComponent(name) + '=' + encodeURIComponent(params[name]);
    });
    return parts.length ? '?' + parts.join('&') : '';
  }

  // Views: one section shown at a time.
  function open(view) {
    Array.prototype.forEach.call(document.querySelectorAll('.view'), function (section) { section.hidden = section.id !== 'view-' + view; });
    Array.prototype.forEach.call(document.querySelectorAll('#tabs button'), function (tab) {
      tab.classList.toggle('current', tab.dataset.view === view);
    });
  }
  var loaders = {
    applications: loadApplications,
    endpoints: loadEndpoints,
    messages: loadMessages,
    catalog: loadCatalog,
    operational: loadOperational,
  };
  Array.prototype.forEach.call(document.querySelectorAll('#tabs button'), function (tab) {
    tab.addEventListener('click', function () {
      notice.hidden = true;
      open(tab.dataset.view);
      loaders[tab.dataset.view]().catch(fail);
    });
  });

  function loadApplications() {
    return call('GET', 'applications?limit=250').then(function (page) {
      apps = {};
      var body = clear('#applications tbody');
      var selects = [document.querySelector('#add-endpoint select[name=app_id]'), document.querySelector('#message-filter select[name=app_id]')];
      selects[0].textContent = '';
      selects[1].textContent = '';
      selects[1].appendChild(el('option', 'All')).value = '';
      page.data.forEach(function (app) {
        apps[app.id] = app;
        var row = el('tr');
        row.dataset.appId = app.id;
        cell(row, app.name);
        codeCell(row, app.id);
        cell(row, app.uid || '—');
        cell(row, when(app.created_at));
        body.appendChild(row);
        selects.forEach(function (select) { var option = el('option', app.name); option.value = app.id; select.appendChild(option); });
      });
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No applications yet.'));
    });
  }

  function ratio(totals) {
    var all = totals.success + totals.failure;
    return all === 0 ? 'no attempts' : Math.round((totals.success / all) * 1000) / 10 + '% of ' + all;
  }

  function setStatus(endpoint, status) {
    return call('PATCH', 'endpoints/' + endpoint.id, { status: status }).then(function (updated) {
      show('Endpoint ' + updated.id + ' is ' + updated.status + '.');
      return updated;
    });
  }

  // Runs the jobs (functions returning promises) at most width at a time.
  function inTurn(jobs, width) {
    var next = 0;
    function run() {
      if (next >= jobs.length) return Promise.resolve();
      var job = jobs[next++];
      return job().then(run, run);
    }
    var runs = [];
    for (var i = 0; i < width; i++) runs.push(run());
    return Promise.all(runs);
  }

  // A page of 50 endpoints, their 24 h ratios read two at a time: opening the page spends at most 50 of the
  // organization's requests (its rate limit is shared by every key), not one burst per endpoint it has.
  function loadEndpoints() {
    return loadApplications().then(function () { return call('GET', 'endpoints?limit=50'); }).then(function (page) {
      var body = clear('#endpoints tbody');
      var ratios = [];
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No endpoints yet.'));
      page.data.forEach(function (endpoint) {
        var row = el('tr');
        row.dataset.endpointId = endpoint.id;
        var url = codeCell(row, endpoint.url);
        if (endpoint.description) url.appendChild(el('div', endpoint.description));
        cell(row, apps[endpoint.app_id] ? apps[endpoint.app_id].name : endpoint.app_id);
        cell(row, endpoint.status, 'status-' + endpoint.status);
        var success = cell(row, '…', 'ratio');
        ratios.push(function () {
          return call('GET', 'endpoints/' + endpoint.id + '/stats').then(function (stats) { success.textContent = ratio(stats.totals); }).catch(function (error) {
            success.textContent = error.message;
          });
        });
        var actions = el('td');
        actions.appendChild(button('Open', function () { openEndpoint(endpoint.id).catch(fail); }));
        actions.appendChild(button(endpoint.status === 'disabled' ? 'Enable' : 'Disable', function () {
          setStatus(endpoint, endpoint.status === 'disabled' ? 'active' : 'disabled').then(loadEndpoints).catch(fail);
        }));
        row.appendChild(actions);
        body.appendChild(row);
      });
      if (page.has_more) body.appendChild(el('tr')).appendChild(el('td', 'The first 50 endpoints are shown.'));
      inTurn(ratios, 2);
    });
  }

  function attemptLine(attempt) {
    return '#' + attempt.attempt_number + ' ' + attempt.trigger + ' · ' + attempt.status +
      (attempt.response_status !== null ? ' · HTTP ' + attempt.response_status : '') +
      (attempt.error && attempt.error !== 'HTTP ' + attempt.response_status ? ' · ' + attempt.error : '') + ' · ' + attempt.duration_ms + ' ms · ' + when(attempt.created_at);
  }

  // A delivery with every attempt it has (the newest 20, as GET /deliveries/{id} gives them) and a Retry.
  function renderDelivery(box, delivery, reload) {
    var item = el('div', null, 'delivery');
    item.dataset.deliveryId = delivery.id;
    var head = el('div');
    head.appendChild(el('code', delivery.id));
    head.appendChild(document.createTextNode(' · message '));
    head.appendChild(el('code', delivery.message_id));
    head.appendChild(document.createTextNode(' · endpoint '));
    head.appendChild(el('code', delivery.endpoint_id));
    head.appendChild(document.createTextNode(' · '));
    head.appendChild(el('span', delivery.status, 'status-' + delivery.status));
    head.appendChild(document.createTextNode(' · ' + delivery.attempt_count + ' attempt(s) '));
    head.appendChild(button('Retry', function () {
      call('POST', 'deliveries/' + delivery.id + '/retry').then(function (result) {
        show('Retry of ' + delivery.id + ' queued as attempt ' + result.attempt_number + '.');
        return waitForAttempt(delivery.id, result.attempt_number);
      }).then(reload).catch(fail);
    }));
    item.appendChild(head);
    var list = el('ul', null, 'attempts');
    item.appendChild(list);
    box.appendChild(item);
    return call('GET', 'deliveries/' + delivery.id).then(function (full) {
      item.insertBefore(traceLine(full.trace_id), list);
      (full.attempts || []).slice().reverse().forEach(function (attempt) { list.appendChild(el('li', attemptLine(attempt))); });
      if (!full.attempts || full.attempts.length === 0) list.appendChild(el('li', 'No attempt yet.'));
    });
  }

  // The message's trace id, which every attempt's traceparent carries: what to search in a tracing backend.
  function traceLine(traceId) {
    var line = el('div', 'Trace ', 'trace');
    line.appendChild(el('code', traceId));
    line.appendChild(document.createTextNode(' '));
    var copy = button('Copy', function () {
      navigator.clipboard.writeText(traceId).then(function () { copy.textContent = 'Copied'; }, function () {
        copy.textContent = 'Select the id to copy it';
      });
    });
    line.appendChild(copy);
    return line;
  }

  // Polls the delivery until the retried attempt is recorded (for at most ten seconds).
  function waitForAttempt(deliveryId, number) {
    var deadline = Date.now() + 10000;
    function poll() {
      return call('GET', 'deliveries/' + deliveryId).then(function (full) {
        var done = (full.attempts || []).some(function (attempt) { return attempt.attempt_number >= number; });
        if (done || Date.now() > deadline) return;
        return new Promise(function (resolve) { setTimeout(resolve, 300); }).then(poll);
      });
    }
    return poll();
  }

  function filterText(filter) { return filter ? JSON.stringify(filter) : 'none: every message'; }

  var current = null;
  function openEndpoint(id) {
    open('endpoint');
    current = id;
    return call('GET', 'endpoints/' + id).then(function (endpoint) {
      document.getElementById('endpoint-id').textContent = endpoint.id;
      var details = clear('#endpoint-details');
      [['URL', endpoint.url], ['Application', apps[endpoint.app_id] ? apps[endpoint.app_id].name + ' (' + endpoint.app_id + ')' : endpoint.app_id],
        ['Status', endpoint.status], ['Description', endpoint.description || '—'],
        ['Event types', endpoint.event_types.length ? endpoint.event_types.join(', ') : 'all'],
        ['Ordering', endpoint.ordering], ['Rate limit', endpoint.rate_limit === null ? 'none' : endpoint.rate_limit + ' a second'],
        ['Filter', filterText(endpoint.filter)],
        ['Signatures', endpoint.signature_type],
        ['Client certificate', endpoint.tls && endpoint.tls.client_cert ? 'until ' + when(endpoint.tls.client_cert_not_after) : 'none'],
        ['OAuth2', endpoint.auth ? endpoint.auth.client_id + ' at ' + endpoint.auth.token_url : 'none'],
        ['Created', when(endpoint.created_at)]].forEach(function (pair) {
        details.appendChild(el('dt', pair[0]));
        details.appendChild(el('dd', pair[1], pair[0] === 'Status' ? 'status-' + endpoint.status : pair[0] === 'Filter' ? 'filter-value' : null));
      });
      clear('#endpoint-filter').appendChild(filterEditor(endpoint, function (filter) {
        return call('PATCH', 'endpoints/' + id, { filter: filter }).then(function (saved) {
          document.querySelector('#endpoint-details .filter-value').textContent = filterText(saved.filter);
        });
      }, function (body) { return call('POST', 'endpoints/' + id + '/filter-test', body); }));
      var actions = clear('#endpoint-actions');
      actions.appendChild(button(endpoint.status === 'disabled' ? 'Enable' : 'Disable', function () {
        setStatus(endpoint, endpoint.status === 'disabled' ? 'active' : 'disabled').then(function () { return openEndpoint(id); }).catch(fail);
      }));
      actions.appendChild(button('Back to endpoints', function () { open('endpoints'); loadEndpoints().catch(fail); }));
      var settings = clear('#endpoint-receiver-settings');
      actions.appendChild(button('Receiver security', function () {
        if (settings.firstChild) return;
        settings.appendChild(window.HeraldReceiverSettings.form(endpoint, function (body) {
          call('PATCH', 'endpoints/' + id, body).then(function () {
            show('Receiver settings saved.');
            return openEndpoint(id);
          }).catch(fail);
        }));
      }));
      var since = document.querySelector('#recover-endpoint input[name=since]');
      since.value = new Date(Date.now() - 86400000 - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16);
      return Promise.all([
        call('GET', 'endpoints/' + id + '/stats').then(function (stats) { window.HeraldChart.draw(document.getElementById('endpoint-chart'), stats); }),
        loadEndpointDeliveries(id),
      ]);
    });
  }

  function loadEndpointDeliveries(id) {
    return call('GET', 'deliveries?limit=20&endpoint_id=' + encodeURIComponent(id)).then(function (page) {
      var box = clear('#endpoint-deliveries');
      if (page.data.length === 0) box.appendChild(el('p', 'No deliveries yet.'));
      return Promise.all(page.data.map(function (delivery) {
        return renderDelivery(box, delivery, function () { return openEndpoint(id); });
      }));
    });
  }

  document.getElementById('recover-endpoint').addEventListener('submit', function (event) {
    event.preventDefault();
    var since = new Date(event.target.since.value).toISOString();
    call('POST', 'endpoints/' + current + '/recover', { since: since }).then(function (task) {
      show('Recovery started (' + task.id + '): failed deliveries of messages since ' + when(since) + ' get a new attempt.');
    }).catch(fail);
  });

  function loadMessages() {
    var form = document.getElementById('message-filter');
    var chosen = { app: form.app_id.value, type: form.event_type.value };
    return Promise.all([loadApplications(), loadCatalog()]).then(function () {
      form.app_id.value = chosen.app;
      form.event_type.value = chosen.type;
      return call('GET', 'messages' + query({ limit: '50', app_id: chosen.app, event_type: chosen.type }));
    }).then(function (page) {
      var body = clear('#messages tbody');
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No messages.'));
      page.data.forEach(function (message) {
        var row = el('tr');
        row.dataset.messageId = message.id;
        codeCell(row, message.id);
        cell(row, message.event_type);
        cell(row, apps[message.app_id] ? apps[message.app_id].name : message.app_id);
        cell(row, when(message.created_at));
        var actions = el('td');
        actions.appendChild(button('Deliveries', function () { loadMessageDeliveries(message.id).catch(fail); }));
        row.appendChild(actions);
        body.appendChild(row);
      });
    });
  }

  function loadMessageDeliveries(messageId) {
    return call('GET', 'messages/' + messageId + '/deliveries?limit=50').then(function (page) {
      document.getElementById('message-deliveries-box').hidden = false;
      document.getElementById('message-deliveries-of').textContent = messageId;
      var box = clear('#message-deliveries');
      if (page.data.length === 0) box.appendChild(el('p', 'No endpoint was subscribed to this message.'));
      return Promise.all(page.data.map(function (delivery) {
        return renderDelivery(box, delivery, function () { return loadMessageDeliveries(messageId); });
      }));
    });
  }

  document.getElementById('message-filter').addEventListener('submit', function (event) {
    event.preventDefault();
    loadMessages().catch(fail);
  });

  function loadCatalog() {
    return call('GET', 'event-types?limit=250').then(function (page) {
      var body = clear('#catalog tbody');
      var select = document.querySelector('#message-filter select[name=event_type]');
      select.textContent = '';
      select.appendChild(el('option', 'All')).value = '';
      page.data.forEach(function (type) {
        var row = el('tr');
        codeCell(row, type.name);
        cell(row, type.description || '—');
        cell(row, type.schema ? 'yes' : 'none');
        body.appendChild(row);
        var option = el('option', type.name);
        option.value = type.name;
        select.appendChild(option);
      });
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'The catalog is empty.'));
    });
  }

  // The environment's operational endpoints (GET /api/v1/operational-endpoints).
  function loadOperational() {
    return request('GET', 'operational-endpoints').then(function (reply) {
      var box = clear('#operational');
      if (reply.status === 401) { signOut(); throw new Error('The API key was refused: sign in again.'); }
      if (reply.status >= 400) throw new Error((reply.data && reply.data.error && reply.data.error.message) || ('HTTP ' + reply.status));
      var items = reply.data.data || [];
      if (items.length === 0) { box.appendChild(el('p', 'none', 'none')); return; }
      var table = el('table');
      var head = el('tr');
      ['URL', 'Id', 'Description', 'Event types'].forEach(function (name) { head.appendChild(el('th', name)); });
      table.appendChild(el('thead')).appendChild(head);
      var body = el('tbody');
      items.forEach(function (item) {
        var row = el('tr');
        codeCell(row, item.url);
        codeCell(row, item.id);
        cell(row, item.description || '—');
        cell(row, item.event_types && item.event_types.length ? item.event_types.join(', ') : 'all');
        body.appendChild(row);
      });
      table.appendChild(body);
      box.appendChild(table);
    });
  }

  document.getElementById('add-application').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    call('POST', 'applications', { name: form.elements.namedItem('name').value }).then(function (app) {
      show('Application ' + app.id + ' created. Its customer portal (shown once): ' + location.origin + app.portal_path);
      form.reset();
      return loadApplications();
    }).catch(fail);
  });

  document.getElementById('add-endpoint').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var body = { app_id: form.app_id.value, url: form.url.value };
    if (form.description.value) body.description = form.description.value;
    call('POST', 'endpoints', body).then(function (endpoint) {
      show('Endpoint ' + endpoint.id + ' created. ' + (endpoint.signing_secret ? 'Its signing secret (shown once): ' + endpoint.signing_secret : 'Its public key: ' + endpoint.public_key));
      form.reset();
      return loadEndpoints();
    }).catch(fail);
  });

  function signedIn() {
    var live = /^sk_live_/.test(key());
    var mode = document.getElementById('mode');
    mode.textContent = live ? 'Live' : 'Test';
    mode.className = live ? 'badge live' : 'badge';
    mode.hidden = false;
    document.getElementById('sign-in-section').hidden = true;
    document.getElementById('signed-in').hidden = false;
    document.getElementById('sign-out').hidden = false;
    open('endpoints');
    return loadEndpoints();
  }

  function signOut() {
    sessionStorage.removeItem(KEY);
    document.getElementById('signed-in').hidden = true;
    document.getElementById('sign-out').hidden = true;
    document.getElementById('mode').hidden = true;
    document.getElementById('sign-in-section').hidden = false;
  }
  document.getElementById('sign-out').addEventListener('click', function () { signOut(); notice.hidden = true; });

  document.getElementById('sign-in').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var candidate = form.key.value.trim();
    form.reset();
    sessionStorage.setItem(KEY, candidate);
    // The key is checked by one read before anything is shown.
    call('GET', 'applications?limit=1').then(function () {
      notice.hidden = true;
      return signedIn();
    }).catch(fail);
  });

  if (key()) signedIn().catch(fail);
})();
`;
