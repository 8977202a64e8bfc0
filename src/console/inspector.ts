// The console's delivery inspector (part of the console's script, src/console/script.ts): on a delivery's
// page, the request Herald sent and the answer it got, side by side, for one attempt at a time (the newest
// first), read with the page rather than behind a click. JSON bodies are formatted; why the attempt was
// made (its trigger) is said in words.

export const INSPECTOR_JS = `
  var TRIGGERS = {
    scheduled: 'Scheduled: sent when the delivery was due, by its retry schedule',
    manual: 'Manual: a retry someone asked for (the console, the portal or the API)',
  };
  // A body as text, pretty-printed when it is JSON.
  function formatted(text) {
    if (text === null || text === undefined || text === '') return null;
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (error) { return text; }
  }
  function headerText(headers) {
    return headers ? Object.keys(headers).map(function (name) { return name + ': ' + headers[name]; }).join('\\n') : null;
  }
  function pane(title, lines) {
    var box = el('div', null, 'pane');
    box.appendChild(el('h4', title));
    lines.forEach(function (line) {
      box.appendChild(el('div', line[0], 'pane-label'));
      box.appendChild(line[1] === null ? el('p', line[2], 'hint') : el('pre', line[1], line[3]));
    });
    return box;
  }

  // Fills box with the inspector of delivery (as GET /deliveries/{id} gives it); payload is the message's
  // stored payload answer, or null once it is gone.
  function renderInspector(box, delivery, payload) {
    box.textContent = '';
    var attempts = delivery.attempts || [];
    box.appendChild(el('h3', 'Inspector'));
    if (attempts.length === 0) { box.appendChild(el('p', 'No attempt yet: the request shows here once one is made.', 'none')); return; }
    var picker = el('div', null, 'attempt-picker');
    var sides = el('div', null, 'sides');
    box.appendChild(picker);
    box.appendChild(sides);
    function show(attempt) {
      Array.prototype.forEach.call(picker.children, function (choice) { choice.classList.toggle('current', choice.dataset.attempt === String(attempt.attempt_number)); });
      sides.textContent = '';
      sides.dataset.attempt = String(attempt.attempt_number);
      var endpoint = endpointsById[delivery.endpoint_id];
      var target = attempt.request ? attempt.request.method + ' ' + attempt.request.url : 'POST ' + (endpoint ? endpoint.url : delivery.endpoint_id);
      var body = attempt.request ? formatted(attempt.request.body) : payload ? JSON.stringify(payload.payload, null, 2) : null;
      var request = pane('Request', [
        [target, null, TRIGGERS[attempt.trigger] || attempt.trigger],
        ['Headers', headerText(attempt.request_headers), 'No headers kept.', 'request-headers'],
        [attempt.request ? 'Body, as the transformation made it' : 'Body: data, the payload', body, 'The payload is no longer stored.', 'request-body'],
      ]);
      request.classList.add('request');
      var answered = attempt.response_status !== null ? 'HTTP ' + attempt.response_status : 'No answer' + (attempt.error ? ': ' + attempt.error : '');
      var response = pane('Response', [
        [answered + ' · ' + attempt.duration_ms + ' ms · ' + when(attempt.created_at), null, attempt.status === 'success' ? 'Delivered.' : 'Failed: retried on the schedule while attempts are left.'],
        ['Headers', headerText(attempt.response_headers), 'No headers kept.', 'response-headers'],
        ['Body', formatted(attempt.response_body), 'No response body stored.', 'response-body'],
      ]);
      response.classList.add('response');
      sides.appendChild(request);
      sides.appendChild(response);
    }
    attempts.forEach(function (attempt) {
      var choice = button('#' + attempt.attempt_number + ' ' + attempt.status, function () { show(attempt); });
      choice.dataset.attempt = String(attempt.attempt_number);
      choice.className = 'status-' + attempt.status;
      picker.appendChild(choice);
    });
    show(attempts[0]);
  }

  function loadInspector(delivery) {
    return Promise.all([
      call('GET', 'deliveries/' + encodeURIComponent(delivery.id)),
      request('GET', 'messages/' + encodeURIComponent(delivery.message_id) + '/payload').then(function (reply) {
        return reply.status === 200 ? reply.data : null;
      }),
      // A plain attempt's request names the endpoint's URL: read before the inspector draws it.
      endpointRead(delivery.endpoint_id).catch(function () { return null; }),
    ]).then(function (all) { renderInspector(clear('#delivery-inspector'), all[0], all[1]); });
  }
`;
