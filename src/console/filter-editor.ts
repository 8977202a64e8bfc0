// The content-filter editor shared by the console and the portal (written into both scripts, after the DOM
// helpers): the endpoint's filter as JSON, saved with `save`, and a draft tried against a sample payload
// with `test` (the filter-test routes) before it is saved. What either does is said inside the form.

export const FILTER_EDITOR_JS = `
  function filterEditor(endpoint, save, test) {
    var form = el('form', null, 'filter-form');
    var filterLabel = el('label', 'Filter (a MongoDB-style query over {type, timestamp, data}; empty: every message) ');
    var text = el('textarea');
    text.name = 'filter'; text.rows = 5; text.cols = 60; text.spellcheck = false;
    text.value = endpoint.filter ? JSON.stringify(endpoint.filter, null, 2) : '';
    filterLabel.appendChild(text);
    form.appendChild(filterLabel);
    var sample = sampleInputs(form, endpoint, '');
    var payload = sample.payload;
    var eventType = sample.eventType;
    var result = el('p', null, 'filter-result');
    result.setAttribute('role', 'status');
    function say(message, isError) { result.textContent = message; result.className = 'filter-result' + (isError ? ' error' : ''); }
    function parsed(value, name) {
      if (!value.trim()) return null;
      try { return JSON.parse(value); } catch (error) { throw new Error(name + ' is not valid JSON: ' + error.message); }
    }
    form.appendChild(button('Test filter', function () {
      Promise.resolve().then(function () {
        return test({ filter: parsed(text.value, 'The filter'), payload: parsed(payload.value, 'The payload') || {}, event_type: eventType.value });
      }).then(function (verdict) {
        say(verdict.matches ? 'Matches: a message like this is delivered to this endpoint.' : 'Does not match: a message like this is not delivered to this endpoint.');
      }).catch(function (error) { say(error.message, true); });
    }));
    var saveButton = el('button', 'Save filter');
    saveButton.type = 'submit';
    form.appendChild(saveButton);
    form.appendChild(result);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      Promise.resolve().then(function () { return save(parsed(text.value, 'The filter')); }).then(function () {
        say(text.value.trim() ? 'Filter saved: it applies from the next message.' : 'Filter removed: every message is delivered.');
      }).catch(function (error) { say(error.message, true); });
    });
    return form;
  }
`;

export const FILTER_CSS = `
.filter-form textarea { display: block; width: 100%; max-width: 640px; font: .85rem ui-monospace, monospace; }
.filter-result { margin: .4rem 0; font-size: .9rem; } .filter-result.error { color: #b42318; }`;
