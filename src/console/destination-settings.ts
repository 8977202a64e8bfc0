import { destinationForms } from '../domain/destinations.js';

// The fields of a destination (docs/destinations.md), shared by the console and the portal: a type select
// whose choice shows that type's config fields, for a new endpoint, and the URL and config of a
// destination being edited. The fields come from the domain's own rules (destinationForms), so a form
// offers exactly what the API takes. A stored secret shows as "<redacted>"; left as it is, the update
// keeps it. A same-origin script that builds the form with the DOM, every value set as text (the pages'
// strict Content-Security-Policy holds).

export const DESTINATION_SETTINGS_JS = `
'use strict';
(function () {
  var FORMS = ${JSON.stringify(destinationForms())};

  function input(parent, label, name, value, kind) {
    var wrap = document.createElement('label');
    wrap.textContent = label + ' ';
    var field;
    if (kind === 'boolean') {
      field = document.createElement('input');
      field.type = 'checkbox';
      field.checked = value === true;
    } else {
      field = document.createElement('input');
      if (kind === 'integer') field.type = 'number';
      if (kind === 'secret') field.type = 'password';
      field.value = value == null ? '' : String(value);
    }
    field.name = name;
    wrap.appendChild(field);
    parent.appendChild(wrap);
    return field;
  }

  /** Fills \`box\` with the config fields of \`type\`, valued from \`config\` (or the defaults). */
  function fields(box, type, config) {
    while (box.firstChild) box.removeChild(box.firstChild);
    var form = FORMS[type];
    if (!form) return;
    config = config || {};
    form.fields.forEach(function (f) {
      var value = config[f.name] !== undefined ? config[f.name] : f.default;
      var label = f.name + (f.required ? ' (required)' : '') + (f.kind === 'template' ? ' (template)' : '');
      if (f.kind === 'sasl') {
        var sasl = value || {};
        input(box, 'sasl mechanism (plain, scram-sha-256, scram-sha-512; empty: none)', 'config.sasl.mechanism', sasl.mechanism, 'string');
        input(box, 'sasl username', 'config.sasl.username', sasl.username, 'string');
        input(box, 'sasl password', 'config.sasl.password', sasl.password, 'secret');
      } else input(box, label, 'config.' + f.name, value, f.secret ? 'secret' : f.kind);
    });
    var hint = document.createElement('div');
    hint.className = 'destination-hint';
    hint.textContent = 'URL: ' + form.schemes.map(function (s) { return s + '://…'; }).join(' or ') +
      '. Templates take {event_type}, {app_id}, {app_uid}, {endpoint_id}, {message_id}.';
    box.appendChild(hint);
  }

  /** The config the fields of \`type\` in \`form\` hold: empty optional fields are null (their default). */
  function read(form, type) {
    var spec = FORMS[type];
    if (!spec) return null;
    var config = {};
    var value = function (name) { var e = form.elements.namedItem(name); return e ? e.value.trim() : ''; };
    spec.fields.forEach(function (f) {
      if (f.kind === 'sasl') {
        config.sasl = value('config.sasl.mechanism')
          ? { mechanism: value('config.sasl.mechanism'), username: value('config.sasl.username'), password: value('config.sasl.password') }
          : null;
        return;
      }
      var element = form.elements.namedItem('config.' + f.name);
      if (f.kind === 'boolean') config[f.name] = element.checked;
      else if (element.value.trim() === '') config[f.name] = null;
      else config[f.name] = f.kind === 'integer' ? Number(element.value) : element.value.trim();
    });
    return config;
  }

  /**
   * A type select for a form that creates endpoints: its choice shows the type's config fields in a box
   * after it. Returns read(): the body's type and config ({} for http).
   */
  function typeChooser(form, before) {
    var wrap = document.createElement('label');
    wrap.textContent = 'Type ';
    var select = document.createElement('select');
    select.name = 'type';
    ['http'].concat(Object.keys(FORMS)).forEach(function (type) {
      var option = document.createElement('option');
      option.value = type;
      option.textContent = type === 'http' ? 'http (a receiver URL)' : type;
      select.appendChild(option);
    });
    wrap.appendChild(select);
    var box = document.createElement('fieldset');
    box.className = 'destination-config';
    box.hidden = true;
    form.insertBefore(wrap, before);
    form.insertBefore(box, before);
    select.addEventListener('change', function () {
      box.hidden = select.value === 'http';
      fields(box, select.value, null);
    });
    form.addEventListener('reset', function () { box.hidden = true; fields(box, 'http', null); });
    return function () {
      return select.value === 'http' ? {} : { type: select.value, config: read(form, select.value) };
    };
  }

  /** A form to edit a destination's URL and config; save(body) sends {url, config} and returns a promise. */
  function editor(endpoint, save) {
    var f = document.createElement('form');
    f.className = 'destination-settings-form';
    var legend = document.createElement('legend');
    legend.textContent = endpoint.type + ' destination';
    f.appendChild(legend);
    input(f, 'URL', 'url', endpoint.url, 'string');
    var box = document.createElement('fieldset');
    box.className = 'destination-config';
    f.appendChild(box);
    fields(box, endpoint.type, endpoint.config);
    var button = document.createElement('button');
    button.type = 'submit';
    button.textContent = 'Save destination';
    f.appendChild(button);
    f.addEventListener('submit', function (event) {
      event.preventDefault();
      save({ url: f.elements.namedItem('url').value.trim(), config: read(f, endpoint.type) });
    });
    return f;
  }

  window.HeraldDestinations = { typeChooser: typeChooser, editor: editor };
})();
`;
