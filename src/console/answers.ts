// How a delivery and its attempts read, and "Show payload and answers", shared by the console and the
// portal (written into both scripts after the DOM helpers): beside a delivery, the request body Herald sent
// (its message's payload, pretty-printed; gone once retention dropped it) and, for each attempt, newest
// first, the receiver's status, the duration, the headers sent (credentials redacted) and received, and the
// response body as stored, and where a transformation reshaped the request, the method, URL and body it
// sent. Both are read when the person asks, never with a list.

export const ANSWERS_JS = `
  // A delivery as a person reads it, written into head: event type → endpoint · status · attempts · age.
  // endpointNode names the endpoint (its URL where the page knows it).
  function deliverySentence(head, delivery, endpointNode) {
    head.textContent = '';
    head.appendChild(el('span', delivery.event_type || 'event type unknown', 'event-type'));
    head.appendChild(document.createTextNode(' → '));
    head.appendChild(endpointNode);
    head.appendChild(document.createTextNode(' · '));
    head.appendChild(el('span', delivery.status, 'status-' + delivery.status));
    head.appendChild(document.createTextNode(' · ' + delivery.attempt_count + ' attempt(s) · '));
    head.appendChild(ageCell(delivery.created_at));
    head.appendChild(document.createTextNode(' '));
  }

  // One attempt on a line: number, trigger, status, the answer's status, the error, duration and time.
  function attemptLine(attempt) {
    return '#' + attempt.attempt_number + ' ' + attempt.trigger + ' · ' + attempt.status +
      (attempt.response_status !== null ? ' · HTTP ' + attempt.response_status : '') +
      // An answer's error repeats its status ("HTTP 500"): shown once.
      (attempt.error && attempt.error !== 'HTTP ' + attempt.response_status ? ' · ' + attempt.error : '') +
      ' · ' + attempt.duration_ms + ' ms · ' + new Date(attempt.created_at).toLocaleString();
  }

  // What an attempt got back, in a few words: the answer's status, or why none came.
  function answerText(attempt) {
    if (!attempt) return '—';
    if (attempt.response_status !== null) return 'HTTP ' + attempt.response_status;
    return attempt.error || attempt.status;
  }

  // A delivery's attempts as a table, newest first: number, trigger, status, answer, duration and age.
  function attemptsTable(attempts) {
    var table = el('table', null, 'attempts compact');
    var headRow = table.appendChild(el('thead')).appendChild(el('tr'));
    ['#', 'Trigger', 'Status', 'Answer', 'Duration', 'When'].forEach(function (name) { headRow.appendChild(el('th', name)); });
    var body = table.appendChild(el('tbody'));
    if (attempts.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No attempt yet.'));
    attempts.forEach(function (attempt) {
      var row = body.appendChild(el('tr'));
      row.dataset.attempt = String(attempt.attempt_number);
      row.title = attemptLine(attempt);
      row.appendChild(el('td', '#' + attempt.attempt_number));
      row.appendChild(el('td', attempt.trigger));
      row.appendChild(el('td', attempt.status, 'status-' + attempt.status));
      var answer = row.appendChild(el('td', answerText(attempt), 'answer'));
      // An answer's error repeats its status ("HTTP 500"): the error is added only when it says more.
      if (attempt.error && attempt.response_status !== null && attempt.error !== 'HTTP ' + attempt.response_status) answer.appendChild(el('div', attempt.error, 'hint'));
      row.appendChild(el('td', attempt.duration_ms + ' ms'));
      row.appendChild(el('td')).appendChild(ageCell(attempt.created_at));
    });
    return table;
  }

  // readPayload() resolves with the payload route's answer, or null when it answers 410 (no longer stored);
  // readDelivery() resolves with the delivery and its attempts with their response bodies.
  function answersControl(readPayload, readDelivery) {
    var wrap = el('div', null, 'answers-control');
    var box = el('div', null, 'answers');
    box.hidden = true;
    var toggle = button('Show payload and answers', function () {
      if (!box.hidden) { box.hidden = true; toggle.textContent = 'Show payload and answers'; return; }
      toggle.textContent = 'Hide payload and answers';
      box.hidden = false;
      box.textContent = '';
      box.appendChild(el('p', 'Reading…', 'hint'));
      Promise.all([readPayload(), readDelivery()]).then(function (both) {
        box.textContent = '';
        box.appendChild(el('h4', 'Request body: data, the payload'));
        if (both[0] === null) box.appendChild(el('p', 'The payload is no longer stored.', 'payload-gone'));
        else box.appendChild(el('pre', JSON.stringify(both[0].payload, null, 2), 'payload'));
        box.appendChild(el('h4', 'Answers, newest first'));
        var attempts = both[1].attempts || [];
        if (attempts.length === 0) box.appendChild(el('p', 'No attempt yet.'));
        attempts.forEach(function (attempt) {
          var item = el('div', null, 'answer');
          item.dataset.attempt = String(attempt.attempt_number);
          item.appendChild(el('div', '#' + attempt.attempt_number + ' · ' +
            (attempt.response_status !== null ? 'HTTP ' + attempt.response_status : 'no answer' + (attempt.error ? ': ' + attempt.error : '')) +
            ' · ' + attempt.duration_ms + ' ms · ' + new Date(attempt.created_at).toLocaleString(), 'answer-head'));
          // A transformation's request: where it went and the body as sent, beside the payload above.
          if (attempt.request) {
            item.appendChild(el('div', 'Sent as transformed: ' + attempt.request.method + ' ' + attempt.request.url, 'made-request'));
            item.appendChild(el('pre', attempt.request.body, 'made-request-body'));
          }
          item.appendChild(headersBlock('Request headers', attempt.request_headers, 'request-headers'));
          item.appendChild(headersBlock('Response headers', attempt.response_headers, 'response-headers'));
          var body = attempt.response_body;
          item.appendChild(body === null || body === undefined || body === ''
            ? el('p', 'No response body stored.', 'hint')
            : el('pre', body, 'response-body'));
          box.appendChild(item);
        });
      }).catch(function (error) {
        box.textContent = '';
        note(box, error.message, true);
      });
    });
    wrap.appendChild(toggle);
    wrap.appendChild(box);
    return wrap;
  }

  // One attempt's headers, folded: one "name: value" line each (null: none kept, or no answer came).
  function headersBlock(title, headers, className) {
    var names = headers ? Object.keys(headers) : [];
    var block = el('details', null, 'headers ' + className);
    block.appendChild(el('summary', title + ' (' + (headers ? names.length : 'none') + ')'));
    if (headers) block.appendChild(el('pre', names.map(function (name) { return name + ': ' + headers[name]; }).join('\\n')));
    return block;
  }
`;

export const ANSWERS_CSS = `
.answers { margin: .4rem 0 .4rem 1rem; }
.answers h4 { font-size: .85rem; margin: .5rem 0 .2rem; }
.answers pre { background: #f6f7fb; border: 1px solid #e3e6ef; border-radius: 6px; padding: .5rem; max-height: 20rem; overflow: auto; font-size: .8rem; white-space: pre-wrap; word-break: break-all; }
.answer-head, .made-request { font-size: .85rem; color: #4a5568; }
.answers details.headers summary { font-size: .8rem; color: #4a5568; cursor: pointer; }`;
