// The console's audit log (part of the console's script, src/console/script.ts): the environment's changes
// of configuration, newest first, and each application's and endpoint's own history on its page. An entry
// reads: when, who (the key, a portal, the CLI), the action, and each changed field's before and after.

export const AUDIT_JS = `
  function actorText(actor) {
    return actor.type === 'api_key' ? 'key ' + actor.id : actor.type === 'portal' ? 'portal of ' + appName(actor.id) : actor.type + (actor.id ? ' ' + actor.id : '');
  }
  function changeText(changes) {
    return Object.keys(changes).map(function (field) {
      var pair = changes[field];
      return field + ': ' + JSON.stringify(pair[0]) + ' → ' + JSON.stringify(pair[1]);
    }).join('\\n');
  }
  function resourceLink(resource) {
    if (resource.type === 'endpoint') return link(resource.id, href('endpoints', resource.id));
    if (resource.type === 'application') return link(resource.id, href('applications', resource.id));
    return el('code', resource.type + ' ' + resource.id);
  }

  // Entries in a table: one row each; the changes in a cell of their own, a line a field.
  function auditTable(box, entries) {
    if (entries.length === 0) { box.appendChild(el('p', 'No changes recorded.', 'none')); return; }
    var table = el('table', null, 'audit');
    var head = el('tr');
    ['When', 'Who', 'Action', 'Resource', 'Changes'].forEach(function (name) { head.appendChild(el('th', name)); });
    table.appendChild(el('thead')).appendChild(head);
    var body = table.appendChild(el('tbody'));
    entries.forEach(function (entry) {
      var row = el('tr');
      row.dataset.auditId = entry.id;
      cell(row).appendChild(ageCell(entry.created_at));
      cell(row, actorText(entry.actor));
      cell(row, entry.action);
      cell(row).appendChild(resourceLink(entry.resource));
      cell(row, changeText(entry.changes), 'changes');
      body.appendChild(row);
    });
    box.appendChild(table);
  }

  // GET /api/v1/audit-log, filtered by the view's parameters (resource_id, action, actor_id).
  function loadAudit(params) {
    var form = document.getElementById('audit-filter');
    ['resource_id', 'action', 'actor_id'].forEach(function (name) { form[name].value = params[name] || ''; });
    return call('GET', 'audit-log' + query(Object.assign({ limit: '100' }, params))).then(function (page) {
      auditTable(clear('#audit'), page.data);
    });
  }
  document.getElementById('audit-filter').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var params = {};
    ['resource_id', 'action', 'actor_id'].forEach(function (name) { if (form[name].value.trim()) params[name] = form[name].value.trim(); });
    go(href('audit', null, params));
  });

  // A resource's own history, on its page; a key that may not read the log (not an admin) is told so.
  function loadHistory(selector, resourceId) {
    var box = clear(selector);
    return request('GET', 'audit-log?limit=20&resource_id=' + encodeURIComponent(resourceId)).then(function (reply) {
      if (reply.status === 403) { box.appendChild(el('p', 'The history needs an admin key.', 'none')); return; }
      if (reply.status >= 400) throw refused(reply);
      auditTable(box, reply.data.data);
    });
  }
`;
