// The transformation editor shared by the console and the portal (written into both scripts, after the DOM
// helpers): the endpoint's handler code beside the request it makes for a sample payload. While the person
// types, the draft runs through `simulate` (the simulate routes: the sandbox and limits of a real attempt)
// once typing pauses, and the result, or the error, shows beside the code; an answer to an older draft is
// dropped. `save({code, enabled})` writes it (empty code: {code: null}, removed); what either does is said
// inside the form.

export const TRANSFORMATION_EDITOR_JS = `
  var TRANSFORMATION_STARTER = 'function handler(webhook) {\\n  // webhook: {method, url, headers, payload, eventType, cancel}\\n  return webhook;\\n}';
  // Typing pauses this long before a draft is simulated: one run per pause, not one per key.
  var SIMULATE_PAUSE_MS = 300;

  function transformationEditor(endpoint, save, simulate) {
    var saved = endpoint.transformation;
    var form = el('form', null, 'transformation-form');
    var columns = el('div', null, 'transformation-columns');
    var left = el('div', null, 'transformation-code');
    var codeLabel = el('label', 'Handler (JavaScript: function handler(webhook) returns the webhook changed) ');
    var code = el('textarea');
    code.name = 'code'; code.rows = 12; code.spellcheck = false; code.wrap = 'off';
    code.value = saved && saved.code !== null ? saved.code : TRANSFORMATION_STARTER;
    codeLabel.appendChild(code);
    left.appendChild(codeLabel);
    var enabledLabel = el('label', null, 'inline');
    var enabled = el('input');
    enabled.type = 'checkbox'; enabled.name = 'enabled';
    enabled.checked = saved ? saved.enabled : true;
    enabledLabel.appendChild(enabled);
    enabledLabel.appendChild(document.createTextNode(' Run on every attempt'));
    left.appendChild(enabledLabel);
    var sample = sampleInputs(left, endpoint, 'test.event');
    var payload = sample.payload;
    var eventType = sample.eventType;
    var right = el('div', null, 'transformation-preview');
    right.appendChild(el('h4', 'Request it makes'));
    var result = el('pre', null, 'transformation-result');
    result.setAttribute('role', 'status');
    right.appendChild(result);
    columns.appendChild(left);
    columns.appendChild(right);
    form.appendChild(columns);
    var saveButton = el('button', 'Save transformation');
    saveButton.type = 'submit';
    form.appendChild(saveButton);
    var answer = el('p', null, 'transformation-answer');
    answer.setAttribute('role', 'status');
    form.appendChild(answer);

    function show(text, isError) { result.textContent = text; result.className = 'transformation-result' + (isError ? ' error' : ''); }
    function described(request) {
      if (request.cancel) return 'Cancelled: no request is made, and the delivery ends.';
      var names = Object.keys(request.headers);
      return request.method + ' ' + request.url + '\\n' +
        names.map(function (name) { return name + ': ' + request.headers[name]; }).join('\\n') +
        (names.length ? '\\n' : '') + '\\n' + JSON.stringify(request.payload, null, 2);
    }
    var asked = 0;
    var timer = null;
    function run() {
      var turn = ++asked;
      if (!code.value.trim()) { show('No transformation: requests go as Herald builds them.'); return; }
      var sample;
      try { sample = payload.value.trim() ? JSON.parse(payload.value) : {}; } catch (error) {
        show('The sample payload is not valid JSON: ' + error.message, true);
        return;
      }
      show('Running…');
      simulate({ code: code.value, payload: sample, event_type: eventType.value || undefined }).then(function (request) {
        if (turn === asked) show(described(request));
      }, function (error) {
        if (turn === asked) show(error.message, true);
      });
    }
    function soon() { clearTimeout(timer); timer = setTimeout(run, SIMULATE_PAUSE_MS); }
    [code, payload, eventType].forEach(function (input) { input.addEventListener('input', soon); });
    run();

    form.addEventListener('submit', function (event) {
      event.preventDefault();
      // Empty code removes the transformation.
      var removed = !code.value.trim();
      var setting = removed ? { code: null, enabled: false } : { code: code.value, enabled: enabled.checked };
      Promise.resolve().then(function () { return save(setting); }).then(function () {
        answer.className = 'transformation-answer';
        answer.textContent = removed ? 'Transformation removed: attempts go unchanged.'
          : enabled.checked ? 'Transformation saved: it shapes every attempt from now on.' : 'Transformation saved, turned off: attempts go unchanged.';
      }).catch(function (error) {
        answer.className = 'transformation-answer error';
        answer.textContent = error.message;
      });
    });
    return form;
  }
`;

export const TRANSFORMATION_CSS = `
.transformation-columns { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; }
.transformation-form textarea { display: block; width: 100%; font: .85rem ui-monospace, monospace; }
.transformation-form label.inline { display: block; margin: .4rem 0; }
.transformation-preview h4 { font-size: .85rem; margin: .4rem 0 .2rem; }
.transformation-result { background: #f6f7fb; border: 1px solid #e3e6ef; border-radius: 6px; padding: .5rem; min-height: 6rem; max-height: 24rem; overflow: auto; font-size: .8rem; white-space: pre-wrap; word-break: break-all; }
.transformation-result.error, .transformation-answer.error { color: #b42318; }
.transformation-answer { margin: .4rem 0; font-size: .9rem; }`;
