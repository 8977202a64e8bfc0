// The console's API keys view (part of the console's script, src/console/script.ts): the environment's keys
// with their role, applications and expiry, a form that makes one (its plaintext shown once), and Revoke.
// The key signed in here is an admin's; another role is answered 403, which the view says.

import { ROLES } from '../domain/access.js';

export const KEYS_JS = `
  var ROLES = ${JSON.stringify(ROLES)};
  var keyForm = document.getElementById('key-form');
  ROLES.forEach(function (role) { var option = el('option', role); option.value = role; keyForm.role.appendChild(option); });

  // The environment's keys (GET /api/v1/api-keys), newest first, and the form's application choices.
  function loadKeys() {
    return Promise.all([call('GET', 'api-keys?limit=50'), Object.keys(apps).length ? null : loadApplications()]).then(function (both) {
      var page = both[0];
      var choices = clear('#key-apps');
      choices.appendChild(el('legend', 'Applications (none ticked: every application)'));
      Object.keys(apps).forEach(function (id) {
        var label = el('label');
        var box = el('input');
        box.type = 'checkbox'; box.name = 'app_id'; box.value = id;
        label.appendChild(box);
        label.appendChild(document.createTextNode(' ' + appName(id)));
        choices.appendChild(label);
      });
      var body = clear('#keys tbody');
      page.data.forEach(function (item) { body.appendChild(keyRow(item)); });
    });
  }

  function keyRow(item) {
    var row = el('tr');
    row.dataset.keyId = item.id;
    cell(row, item.name || '—');
    cell(row, item.role);
    cell(row, item.app_ids ? item.app_ids.map(appName).join(', ') : 'every application');
    cell(row, item.revoked_at ? 'revoked ' + when(item.revoked_at) : item.expires_at ? when(item.expires_at) : 'never');
    cell(row).appendChild(ageCell(item.created_at));
    cell(row).appendChild(idWithCopy(item.id));
    var actions = cell(row);
    if (!item.revoked_at)
      actions.appendChild(button('Revoke', confirmed('Revoke the key ' + (item.name || item.id) + '? It stops working at once.', function () {
        call('DELETE', 'api-keys/' + item.id).then(function () {
          return loadKeys().then(function () { note(document.getElementById('keys'), 'Key ' + item.id + ' revoked.'); });
        }).catch(failNear(actions));
      })));
    return row;
  }

  keyForm.addEventListener('submit', function (event) {
    event.preventDefault();
    var body = { name: keyForm.name.value, role: keyForm.role.value };
    var chosen = Array.prototype.map.call(keyForm.querySelectorAll('input[name=app_id]:checked'), function (box) { return box.value; });
    if (chosen.length) body.app_ids = chosen;
    if (keyForm.expires_at.value) body.expires_at = new Date(keyForm.expires_at.value).toISOString();
    call('POST', 'api-keys', body).then(function (made) {
      return loadKeys().then(function () {
        keyForm.reset();
        note(keyForm, 'Key ' + made.id + ' (' + made.role + ') made. Copy it now, it is shown once: ' + made.key);
      });
    }).catch(failNear(keyForm));
  });
`;
