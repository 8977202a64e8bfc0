// The console's editors of the environment's settings (part of the console's script, src/console/script.ts):
// the event catalog (description, JSON Schema, example; created with POST, changed with PATCH) and the
// operational endpoints (create, update, disable, delete, rotate the secret). What the API refuses is said
// inside the form that sent it; destructive actions ask first.

import { OPERATIONAL_EVENT_TYPES } from '../domain/operational.js';

export const EDITORS_JS = `
  var catalogForm = document.getElementById('event-type-form');
  var editing = null;

  function loadCatalog() {
    return call('GET', 'event-types?limit=250').then(function (page) {
      catalogNames = page.data.map(function (type) { return { value: type.name, label: type.name }; });
      var body = clear('#catalog tbody');
      page.data.forEach(function (type) {
        var row = el('tr');
        row.dataset.eventType = type.name;
        codeCell(row, type.name);
        cell(row, type.description || '—');
        cell(row, type.schema ? 'yes' : 'none');
        cell(row, String(type.version));
        var actions = cell(row);
        actions.appendChild(button('Edit', function () { editEventType(type); }));
        actions.appendChild(link('Messages', href('messages', null, { event_type: type.name })));
        body.appendChild(row);
      });
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'The catalog is empty.'));
    });
  }

  function json(value) { return value === null || value === undefined ? '' : JSON.stringify(value, null, 2); }

  // The form, filled with an entry to change, or empty for a new one.
  function editEventType(type) {
    editing = type ? type.name : null;
    catalogForm.hidden = false;
    var old = catalogForm.querySelector('.note');
    if (old) old.remove();
    document.getElementById('event-type-form-title').textContent = type ? 'Edit ' + type.name : 'New event type';
    catalogForm.elements.namedItem('name').value = type ? type.name : '';
    catalogForm.elements.namedItem('name').readOnly = Boolean(type);
    catalogForm.description.value = type ? type.description || '' : '';
    catalogForm.schema.value = type ? json(type.schema) : '';
    catalogForm.example_json.value = type ? json(type.example_json) : '{}';
    catalogForm.scrollIntoView({ block: 'nearest' });
  }
  document.getElementById('new-event-type').addEventListener('click', function () { editEventType(null); });

  function parsedField(form, name, label) {
    var text = form.elements.namedItem(name).value.trim();
    if (!text) return null;
    try { return JSON.parse(text); } catch (error) { throw new Error(label + ' is not valid JSON: ' + error.message); }
  }

  catalogForm.addEventListener('submit', function (event) {
    event.preventDefault();
    var name = editing;
    Promise.resolve().then(function () {
      var body = { description: catalogForm.description.value };
      var schema = parsedField(catalogForm, 'schema', 'The schema');
      var example = parsedField(catalogForm, 'example_json', 'The example');
      if (example !== null) body.example_json = example;
      if (name) {
        body.schema = schema;
        return call('PATCH', 'event-types/' + encodeURIComponent(name), body);
      }
      if (schema !== null) body.schema = schema;
      body.name = catalogForm.elements.namedItem('name').value.trim();
      return call('POST', 'event-types', body);
    }).then(function (saved) {
      editing = saved.name;
      return loadCatalog().then(function () {
        editEventType(saved);
        note(catalogForm, 'Event type ' + saved.name + ' saved (version ' + saved.version + ').');
      });
    }).catch(failNear(catalogForm));
  });

  // Operational endpoints: Herald's own webhooks to the operator.
  var OPERATIONAL_TYPES = ${JSON.stringify(OPERATIONAL_EVENT_TYPES)};
  var operationalForm = document.getElementById('operational-form');
  var editingOperational = null;
  OPERATIONAL_TYPES.forEach(function (name) {
    var label = el('label');
    var box = el('input');
    box.type = 'checkbox'; box.name = 'event_type'; box.value = name;
    label.appendChild(box);
    label.appendChild(document.createTextNode(' ' + name));
    document.getElementById('operational-event-types').appendChild(label);
  });

  // The environment's operational endpoints (GET /api/v1/operational-endpoints), each with its actions.
  function loadOperational() {
    return call('GET', 'operational-endpoints?limit=250').then(function (page) {
      var box = clear('#operational');
      var items = page.data || [];
      if (items.length === 0) { box.appendChild(el('p', 'none', 'none')); return; }
      var table = el('table');
      var head = el('tr');
      ['URL', 'Description', 'Event types', 'Status', 'Id', ''].forEach(function (name) { head.appendChild(el('th', name)); });
      table.appendChild(el('thead')).appendChild(head);
      var body = el('tbody');
      items.forEach(function (item) { body.appendChild(operationalRow(item)); });
      table.appendChild(body);
      box.appendChild(table);
    });
  }

  function operationalRow(item) {
    var row = el('tr');
    row.dataset.operationalId = item.id;
    codeCell(row, item.url);
    cell(row, item.description || '—');
    cell(row, item.event_types && item.event_types.length ? item.event_types.join(', ') : 'all');
    cell(row, item.status, 'status-' + item.status);
    cell(row).appendChild(idWithCopy(item.id));
    var actions = cell(row);
    function afterwards(text) {
      return loadOperational().then(function () {
        var place = document.querySelector('#operational tr[data-operational-id="' + item.id + '"] td:last-child') || document.getElementById('operational');
        note(place, text);
      });
    }
    actions.appendChild(button('Edit', function () { editOperational(item); }));
    var next = item.status === 'disabled' ? 'active' : 'disabled';
    function setStatus() {
      call('PATCH', 'operational-endpoints/' + item.id, { status: next }).then(function (updated) {
        return afterwards('Operational endpoint ' + updated.id + ' is ' + updated.status + '.');
      }).catch(failNear(actions));
    }
    actions.appendChild(button(next === 'disabled' ? 'Disable' : 'Enable', next === 'disabled'
      ? confirmed('Disable the operational endpoint ' + item.url + '?', setStatus) : setStatus));
    actions.appendChild(button('Rotate secret', confirmed('Rotate the signing secret of ' + item.url + '? The previous one keeps signing for a while.', function () {
      call('POST', 'operational-endpoints/' + item.id + '/rotate-secret').then(function (result) {
        note(actions, 'New signing secret (shown once): ' + result.signing_secret + '\\nThe previous one keeps working until ' + when(result.previous_valid_until) + '.');
      }).catch(failNear(actions));
    })));
    actions.appendChild(button('Delete', confirmed('Delete the operational endpoint ' + item.url + '?', function () {
      call('DELETE', 'operational-endpoints/' + item.id).then(function () {
        return loadOperational().then(function () { note(document.getElementById('operational'), 'Operational endpoint ' + item.id + ' deleted.'); });
      }).catch(failNear(actions));
    })));
    return row;
  }

  function editOperational(item) {
    editingOperational = item ? item.id : null;
    operationalForm.hidden = false;
    var old = operationalForm.querySelector('.note');
    if (old) old.remove();
    document.getElementById('operational-form-title').textContent = item ? 'Edit ' + item.url : 'New operational endpoint';
    operationalForm.url.value = item ? item.url : '';
    operationalForm.description.value = item ? item.description || '' : '';
    Array.prototype.forEach.call(operationalForm.querySelectorAll('input[name=event_type]'), function (box) {
      box.checked = Boolean(item && item.event_types && item.event_types.indexOf(box.value) >= 0);
    });
    operationalForm.scrollIntoView({ block: 'nearest' });
  }
  document.getElementById('new-operational').addEventListener('click', function () { editOperational(null); });

  operationalForm.addEventListener('submit', function (event) {
    event.preventDefault();
    var body = {
      url: operationalForm.url.value,
      description: operationalForm.description.value,
      event_types: Array.prototype.map.call(operationalForm.querySelectorAll('input[name=event_type]:checked'), function (box) { return box.value; }),
    };
    var id = editingOperational;
    (id ? call('PATCH', 'operational-endpoints/' + id, body) : call('POST', 'operational-endpoints', body)).then(function (saved) {
      editingOperational = saved.id;
      return loadOperational().then(function () {
        note(operationalForm, id
          ? 'Operational endpoint ' + saved.id + ' saved.'
          : 'Operational endpoint ' + saved.id + ' created. Its signing secret (shown once): ' + saved.signing_secret);
      });
    }).catch(failNear(operationalForm));
  });
`;
