// DOM helpers written into the console's and the portal's scripts (both are served as same-origin files
// under a strict Content-Security-Policy): every value goes in as text, buttons get listeners, never
// inline handlers, and what an action answers is said beside the control that asked for it.

export const DOM_HELPERS_JS = `
  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }
  function button(label, onClick) {
    var node = el('button', label);
    node.type = 'button';
    node.addEventListener('click', onClick);
    return node;
  }
  function link(text, href, className) {
    var node = el('a', text, className);
    node.href = href;
    return node;
  }

  // Feedback inside the container of the control that caused it (a form, a cell, a delivery): one
  // .note per container, brought into view.
  function note(container, text, isError) {
    var line = null;
    for (var i = 0; i < container.children.length; i++) if (container.children[i].classList.contains('note')) line = container.children[i];
    if (!line) {
      line = el('p');
      line.setAttribute('role', 'status');
      container.appendChild(line);
    }
    line.textContent = text;
    line.className = isError ? 'note error' : 'note';
    line.hidden = false;
    if (line.scrollIntoView) line.scrollIntoView({ block: 'nearest' });
    return line;
  }

  // A destructive action runs only when the person confirms it.
  function confirmed(question, action) {
    return function () { if (window.confirm(question)) action(); };
  }

  // A button that copies text (an id) to the clipboard; label: its text, "Copy" when absent.
  function copyButton(text, label) {
    var copy = button(label || 'Copy', function () {
      navigator.clipboard.writeText(text).then(function () { copy.textContent = 'Copied'; }, function () {
        copy.textContent = 'Select the id to copy it';
      });
    });
    copy.classList.add('copy');
    return copy;
  }
  // An id as code with its copy button.
  function idWithCopy(id) {
    var span = el('span', null, 'id');
    span.appendChild(el('code', id));
    span.appendChild(document.createTextNode(' '));
    span.appendChild(copyButton(id));
    return span;
  }

  // A sample message an editor tries its rule on (a filter, a transformation): its payload (data) as JSON,
  // '{}' to start, and its event type, the endpoint's first or \`fallbackType\`. Appended to \`container\`.
  function sampleInputs(container, endpoint, fallbackType) {
    var payloadLabel = el('label', 'Sample payload (data) ');
    var payload = el('textarea');
    payload.name = 'payload'; payload.rows = 3; payload.cols = 60; payload.spellcheck = false;
    payload.value = '{}';
    payloadLabel.appendChild(payload);
    container.appendChild(payloadLabel);
    var typeLabel = el('label', 'Sample event type ');
    var eventType = el('input');
    eventType.name = 'event_type';
    eventType.value = endpoint.event_types && endpoint.event_types.length ? endpoint.event_types[0] : fallbackType;
    typeLabel.appendChild(eventType);
    container.appendChild(typeLabel);
    return { payload: payload, eventType: eventType };
  }

  // One actions menu per row: "Actions" opens the row's controls; choosing one closes it, and so does a
  // click anywhere else. Items that are null are left out (an action the row does not offer).
  function actionsMenu(items) {
    var menu = el('details', null, 'menu');
    menu.appendChild(el('summary', 'Actions'));
    var list = menu.appendChild(el('div', null, 'menu-items'));
    items.forEach(function (item) { if (item) list.appendChild(item); });
    // A copy button stays in view to say "Copied"; any other choice closes the menu.
    list.addEventListener('click', function (event) {
      var chosen = event.target.closest ? event.target.closest('button, a') : null;
      if (chosen && !chosen.classList.contains('copy')) menu.open = false;
    });
    return menu;
  }
  document.addEventListener('click', function (event) {
    Array.prototype.forEach.call(document.querySelectorAll('details.menu[open]'), function (menu) {
      if (!menu.contains(event.target)) menu.open = false;
    });
  });

  // An endpoint's share of successful attempts over its stats' window, as a row shows it.
  function successRatio(totals) {
    var all = totals.success + totals.failure;
    return all === 0 ? 'no attempts' : Math.round((totals.success / all) * 1000) / 10 + '% of ' + all;
  }

  // How long ago a time was, in the largest whole unit.
  function ago(iso) {
    if (!iso) return '—';
    var seconds = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
    if (seconds < 60) return seconds + ' s ago';
    if (seconds < 3600) return Math.floor(seconds / 60) + ' min ago';
    if (seconds < 86400) return Math.floor(seconds / 3600) + ' h ago';
    return Math.floor(seconds / 86400) + ' d ago';
  }
  function ageCell(iso) {
    var node = el('span', ago(iso), 'age');
    if (iso) node.title = new Date(iso).toLocaleString();
    return node;
  }
`;

export const DOM_HELPERS_CSS = `
.note { margin: .4rem 0; padding: .35rem .6rem; font-size: .9rem; background: #eef4ff; border: 1px solid #b8ccff; border-radius: 6px; white-space: pre-wrap; }
.note.error { background: #fff1f0; border-color: #ffb4ab; color: #b42318; }
button.copy { font-size: .75rem; padding: .05rem .4rem; }
details.menu { position: relative; display: inline-block; }
details.menu > summary { list-style: none; cursor: pointer; padding: .15rem .6rem; border: 1px solid #9aa3b8; border-radius: 5px; background: #fff; font-size: .85rem; white-space: nowrap; }
details.menu > summary::-webkit-details-marker { display: none; }
details.menu > summary::after { content: ' ▾'; }
.menu-items { position: absolute; right: 0; z-index: 20; display: flex; flex-direction: column; min-width: 12rem; padding: .25rem; background: #fff; border: 1px solid #c8cedb; border-radius: 6px; box-shadow: 0 6px 18px rgba(29, 36, 51, .15); }
.menu-items button, .menu-items a { display: block; width: 100%; margin: 0; padding: .35rem .6rem; border: 0; border-radius: 4px; background: none; color: inherit; text-align: left; text-decoration: none; font: inherit; font-size: .9rem; }
.menu-items button:hover, .menu-items a:hover { background: #eef1f8; }
table.compact td, table.compact th { padding: .25rem .5rem; font-size: .9rem; vertical-align: middle; }
table.compact td.actions { text-align: right; width: 1%; }
.age { color: #4a5568; }`;
