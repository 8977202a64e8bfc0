// The console's views of messages and deliveries (part of the console's script, src/console/script.ts): the
// filtered lists, a message's page and a delivery's page. A delivery reads as a person asks about it: event
// type, endpoint, status, attempts and age first, the ids one click away, attempts newest first, and its
// payload and the receiver's answers on demand.

export const DELIVERY_VIEWS_JS = `
  // An endpoint as known, or read once (null: it cannot be read).
  var endpointReads = {};
  function endpointRead(id) {
    if (endpointsById[id]) return Promise.resolve(endpointsById[id]);
    if (!endpointReads[id]) {
      endpointReads[id] = request('GET', 'endpoints/' + encodeURIComponent(id)).then(function (reply) {
        if (reply.status !== 200) return null;
        endpointsById[id] = reply.data;
        return reply.data;
      });
    }
    return endpointReads[id];
  }

  // An endpoint's URL (or description) for a row: known ones at once, others as their read answers.
  function endpointLabel(id) {
    var span = el('span', id, 'endpoint');
    function fill(endpoint) { if (endpoint) span.textContent = endpoint.url + (endpoint.description ? ' (' + endpoint.description + ')' : ''); }
    if (endpointsById[id]) fill(endpointsById[id]);
    else endpointRead(id).then(fill, function () {});
    return span;
  }

  // The message's trace id, which every attempt's traceparent carries: what to search in a tracing backend.
  function traceLine(traceId) {
    var line = el('div', 'Trace ', 'trace');
    line.appendChild(el('code', traceId));
    line.appendChild(document.createTextNode(' '));
    line.appendChild(copyButton(traceId));
    return line;
  }

  // A delivery with its newest 20 attempts (as GET /deliveries/{id} gives them, newest first), a Retry, and
  // its payload and answers on demand. after() runs once a retried attempt is recorded.
  function renderDelivery(box, delivery, after) {
    var item = el('div', null, 'delivery');
    item.dataset.deliveryId = delivery.id;
    var head = el('div', null, 'delivery-head');
    var ids = el('div', null, 'delivery-ids');
    var trace = el('div');
    var list = el('div', null, 'attempts-box');
    function fill(full) {
      deliverySentence(head, full, endpointLabel(full.endpoint_id));
      head.appendChild(button('Retry', function () {
        call('POST', 'deliveries/' + delivery.id + '/retry').then(function (result) {
          note(item, 'Retry of ' + delivery.id + ' queued as attempt ' + result.attempt_number + '.');
          return waitForAttempt(delivery.id, result.attempt_number);
        }).then(function (latest) {
          fill(latest);
          return after && after();
        }).catch(failNear(item));
      }));
      trace.textContent = '';
      if (full.trace_id) trace.appendChild(traceLine(full.trace_id));
      list.textContent = '';
      if (full.attempts) list.appendChild(attemptsTable(full.attempts));
    }
    fill(delivery);
    ids.appendChild(document.createTextNode('Delivery '));
    ids.appendChild(link(delivery.id, href('deliveries', delivery.id)));
    ids.appendChild(document.createTextNode(' '));
    ids.appendChild(copyButton(delivery.id));
    ids.appendChild(document.createTextNode(' · message '));
    ids.appendChild(link(delivery.message_id, href('messages', delivery.message_id)));
    ids.appendChild(document.createTextNode(' · endpoint '));
    ids.appendChild(link(delivery.endpoint_id, href('endpoints', delivery.endpoint_id)));
    item.appendChild(head);
    item.appendChild(ids);
    item.appendChild(trace);
    item.appendChild(list);
    item.appendChild(answersControl(function () {
      return request('GET', 'messages/' + delivery.message_id + '/payload').then(function (reply) {
        if (reply.status === 410) return null;
        if (reply.status >= 400) throw refused(reply);
        return reply.data;
      });
    }, function () { return call('GET', 'deliveries/' + delivery.id); }));
    box.appendChild(item);
    return call('GET', 'deliveries/' + delivery.id).then(fill);
  }

  // Polls the delivery until the retried attempt is recorded (for at most ten seconds); resolves with it.
  function waitForAttempt(deliveryId, number) {
    var deadline = Date.now() + 10000;
    function poll() {
      return call('GET', 'deliveries/' + deliveryId).then(function (full) {
        var done = (full.attempts || []).some(function (attempt) { return attempt.attempt_number >= number; });
        if (done || Date.now() > deadline) return full;
        return new Promise(function (resolve) { setTimeout(resolve, 300); }).then(poll);
      });
    }
    return poll();
  }

  function openDelivery(id) {
    return call('GET', 'deliveries/' + encodeURIComponent(id)).then(function (delivery) {
      document.getElementById('delivery-id').textContent = delivery.id;
      return Promise.all([
        renderDelivery(clear('#delivery-detail'), delivery, function () { return loadInspector(delivery); }),
        loadInspector(delivery),
      ]);
    });
  }

  // The endpoint and event type choices of the filter forms.
  function fillChoices(select, items, chosen) {
    select.textContent = '';
    select.appendChild(el('option', 'All')).value = '';
    items.forEach(function (item) { var option = el('option', item.label); option.value = item.value; select.appendChild(option); });
    if (chosen && !items.some(function (item) { return item.value === chosen; })) {
      var extra = el('option', chosen);
      extra.value = chosen;
      select.appendChild(extra);
    }
    select.value = chosen || '';
  }
  var catalogNames = null;
  function catalogChoices() {
    if (catalogNames) return Promise.resolve(catalogNames);
    return call('GET', 'event-types?limit=250').then(function (page) {
      catalogNames = page.data.map(function (type) { return { value: type.name, label: type.name }; });
      return catalogNames;
    });
  }

  // Deliveries filtered by the address's status, endpoint_id, app_id, event_type, since and until.
  function loadDeliveries(params) {
    var form = document.getElementById('delivery-filter');
    return Promise.all([call('GET', 'endpoints?limit=250'), catalogChoices()]).then(function (both) {
      both[0].data.forEach(function (endpoint) { endpointsById[endpoint.id] = endpoint; });
      fillChoices(form.endpoint_id, both[0].data.map(function (endpoint) { return { value: endpoint.id, label: endpoint.url }; }), params.endpoint_id);
      fillChoices(form.event_type, both[1], params.event_type);
      form.status.value = params.status || '';
      form.since.value = localOf(params.since);
      form.until.value = localOf(params.until);
      form.dataset.appId = params.app_id || '';
      var filters = { limit: '25', status: params.status, endpoint_id: params.endpoint_id, app_id: params.app_id, event_type: params.event_type, since: params.since, until: params.until };
      return pagedRows('deliveries', filters, '#deliveries tbody', 'No deliveries match.', function (delivery) {
        return deliveryRow(delivery, { endpoint: true });
      }, 'deliveries-more');
    });
  }
  // The last answer of each listed delivery, read from its attempts two at a time (a list row carries its
  // status and attempt count; what the receiver said is on the delivery's own read).
  var answerReads = [];
  var answerReading = 0;
  function readAnswerLater(job) {
    answerReads.push(job);
    pumpAnswerReads();
  }
  function pumpAnswerReads() {
    while (answerReading < 2 && answerReads.length > 0) {
      answerReading++;
      answerReads.shift()().then(doneReading, doneReading);
    }
  }
  function doneReading() { answerReading--; pumpAnswerReads(); }

  // A delivery as a table row: status, event type, its endpoint (options.endpoint), attempts, last answer,
  // age, and one actions menu (open, retry, its message, copy the id). options.after runs once a retried
  // attempt is recorded.
  function deliveryRow(delivery, options) {
    var row = el('tr');
    row.dataset.deliveryId = delivery.id;
    var status = cell(row, delivery.status, 'status-' + delivery.status);
    cell(row, delivery.event_type || '—', 'event-type');
    if (options.endpoint) cell(row).appendChild(endpointLabel(delivery.endpoint_id));
    var count = cell(row, String(delivery.attempt_count), 'attempt-count');
    var answer = cell(row, delivery.attempt_count > 0 ? '…' : '—', 'last-answer');
    cell(row).appendChild(ageCell(delivery.created_at));
    var actions = cell(row, null, 'actions');
    function fill(full) {
      status.textContent = full.status;
      status.className = 'status-' + full.status;
      count.textContent = String(full.attempt_count);
      var last = (full.attempts || [])[0];
      answer.textContent = answerText(last);
      answer.title = last ? attemptLine(last) : '';
    }
    if (delivery.attempt_count > 0) {
      readAnswerLater(function () { return call('GET', 'deliveries/' + delivery.id).then(fill, function () { answer.textContent = '—'; }); });
    }
    actions.appendChild(actionsMenu([
      link('Open', href('deliveries', delivery.id)),
      button('Retry', function () {
        call('POST', 'deliveries/' + delivery.id + '/retry').then(function (result) {
          note(actions, 'Retry queued as attempt ' + result.attempt_number + '.');
          return waitForAttempt(delivery.id, result.attempt_number);
        }).then(function (latest) {
          fill(latest);
          return options.after && options.after();
        }).catch(failNear(actions));
      }),
      link('Its message', href('messages', delivery.message_id)),
      options.endpoint ? link('Its endpoint', href('endpoints', delivery.endpoint_id)) : null,
      copyButton(delivery.id, 'Copy id'),
    ]));
    return row;
  }
  document.getElementById('delivery-filter').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    go(href('deliveries', null, {
      status: form.status.value, endpoint_id: form.endpoint_id.value, app_id: form.dataset.appId, event_type: form.event_type.value,
      since: isoOf(form.since.value), until: isoOf(form.until.value),
    }));
  });

  // Messages filtered by the address's app_id, event_type, since and until.
  function loadMessages(params) {
    var form = document.getElementById('message-filter');
    return Promise.all([loadApplications(), catalogChoices()]).then(function (both) {
      form.app_id.value = params.app_id && apps[params.app_id] ? params.app_id : '';
      fillChoices(form.event_type, both[1], params.event_type);
      form.since.value = localOf(params.since);
      form.until.value = localOf(params.until);
      var filters = { limit: '50', app_id: params.app_id, event_type: params.event_type, since: params.since, until: params.until };
      return pagedRows('messages', filters, '#messages tbody', 'No messages.', messageRow, 'messages-more');
    });
  }
  function messageRow(message) {
    var row = el('tr');
    row.dataset.messageId = message.id;
    cell(row, message.event_type, 'event-type');
    cell(row, appName(message.app_id));
    cell(row).appendChild(ageCell(message.created_at));
    cell(row).appendChild(el('code', message.id));
    cell(row, null, 'actions').appendChild(actionsMenu([
      button('Deliveries', function () { go(href('messages', message.id)); }),
      link('Its application', href('applications', message.app_id)),
      copyButton(message.id, 'Copy id'),
    ]));
    return row;
  }
  document.getElementById('message-filter').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    go(href('messages', null, { app_id: form.app_id.value, event_type: form.event_type.value, since: isoOf(form.since.value), until: isoOf(form.until.value) }));
  });

  // A message's page: what it is, its payload on demand, and each of its deliveries.
  function openMessage(id) {
    return call('GET', 'messages/' + encodeURIComponent(id)).then(function (message) {
      if (!apps[message.app_id]) apps[message.app_id] = { id: message.app_id, name: message.app_id };
      document.getElementById('message-id').textContent = message.id;
      var details = clear('#message-details');
      [['Event type', message.event_type], ['Application', appName(message.app_id) + ' (' + message.app_id + ')'],
        ['Created', when(message.created_at)], ['Trace', message.trace_id || '—']].forEach(function (pair) {
        details.appendChild(el('dt', pair[0]));
        details.appendChild(el('dd', pair[1]));
      });
      var payload = clear('#message-payload');
      payload.appendChild(button('Show payload', function () {
        request('GET', 'messages/' + message.id + '/payload').then(function (reply) {
          payload.textContent = '';
          if (reply.status === 410) payload.appendChild(el('p', 'The payload is no longer stored.', 'payload-gone'));
          else if (reply.status >= 400) throw refused(reply);
          else payload.appendChild(el('pre', JSON.stringify(reply.data.payload, null, 2), 'payload'));
        }).catch(failNear(payload));
      }));
      return loadMessageDeliveries(message.id);
    });
  }

  function loadMessageDeliveries(messageId) {
    var body = clear('#message-deliveries tbody');
    function page(cursor) {
      return call('GET', 'messages/' + messageId + '/deliveries?limit=25' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')).then(function (result) {
        if (!cursor && result.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No endpoint was subscribed to this message.'));
        result.data.forEach(function (delivery) { body.appendChild(deliveryRow(delivery, { endpoint: true })); });
        pager('message-deliveries-more', result, page);
      });
    }
    return page('');
  }
`;
