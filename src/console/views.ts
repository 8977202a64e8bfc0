// The console's views of applications and endpoints (part of the console's script, src/console/script.ts):
// the lists, an application's page, and an endpoint's page with what an operator changes on it (status,
// delivery controls, content filter, receiver security, recovery) and its recent deliveries.

export const VIEWS_JS = `
  function appName(id) { return apps[id] ? apps[id].name : id; }

  // The applications (the first 250 are kept for names and the forms' choices; the list pages by 50).
  function loadApplications() {
    return call('GET', 'applications?limit=250').then(function (page) {
      apps = {};
      var selects = [document.querySelector('#add-endpoint select[name=app_id]'), document.querySelector('#message-filter select[name=app_id]')];
      var chosen = selects.map(function (select) { return select.value; });
      selects[0].textContent = '';
      selects[1].textContent = '';
      selects[1].appendChild(el('option', 'All')).value = '';
      page.data.forEach(function (app) {
        apps[app.id] = app;
        selects.forEach(function (select) { var option = el('option', app.name); option.value = app.id; select.appendChild(option); });
      });
      selects.forEach(function (select, i) { if (chosen[i] && apps[chosen[i]]) select.value = chosen[i]; });
      var body = clear('#applications tbody');
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No applications yet.'));
      appendApplications(page.data.slice(0, 50));
      pager('applications-more', { has_more: page.data.length > 50 || page.has_more, next_cursor: (page.data[49] || {}).id }, nextApplications);
    });
  }
  function nextApplications(cursor) {
    return call('GET', 'applications?limit=50&cursor=' + encodeURIComponent(cursor)).then(function (page) {
      appendApplications(page.data);
      pager('applications-more', page, nextApplications);
    });
  }
  function appendApplications(list) {
    var body = document.querySelector('#applications tbody');
    list.forEach(function (app) {
      var row = el('tr');
      row.dataset.appId = app.id;
      row.appendChild(el('td')).appendChild(link(app.name, href('applications', app.id)));
      cell(row, app.uid || '—');
      cell(row).appendChild(ageCell(app.created_at));
      cell(row).appendChild(idWithCopy(app.id));
      body.appendChild(row);
    });
  }

  // An application's page: its details, its endpoints, and links to its messages and deliveries.
  function openApplication(id) {
    return call('GET', 'applications/' + encodeURIComponent(id)).then(function (app) {
      apps[app.id] = app;
      document.getElementById('application-name').textContent = app.name;
      var details = clear('#application-details');
      [['Id', idWithCopy(app.id)], ['UID', app.uid || '—'], ['Created', when(app.created_at)]].forEach(function (pair) {
        details.appendChild(el('dt', pair[0]));
        var dd = details.appendChild(el('dd', typeof pair[1] === 'string' ? pair[1] : null));
        if (typeof pair[1] !== 'string') dd.appendChild(pair[1]);
      });
      var links = clear('#application-links');
      links.appendChild(link('Its messages', href('messages', null, { app_id: app.id })));
      links.appendChild(document.createTextNode(' · '));
      links.appendChild(link('Its deliveries', href('deliveries', null, { app_id: app.id })));
      links.appendChild(document.createTextNode(' · '));
      links.appendChild(link('Its failed deliveries', href('deliveries', null, { app_id: app.id, status: 'failed' })));
      return Promise.all([
        loadHistory('#application-history', app.id),
        call('GET', 'applications/' + encodeURIComponent(app.id) + '/stats').then(function (stats) {
          window.HeraldChart.drawByType(clear('#application-chart'), stats);
        }),
        call('GET', 'endpoints?limit=250&app_id=' + encodeURIComponent(app.id)),
      ]).then(function (all) { return all[2]; });
    }).then(function (page) {
      var box = clear('#application-endpoints');
      if (page.data.length === 0) { box.appendChild(el('p', 'No endpoints yet.')); return; }
      var list = box.appendChild(el('ul'));
      page.data.forEach(function (endpoint) {
        endpointsById[endpoint.id] = endpoint;
        var item = list.appendChild(el('li'));
        item.appendChild(link(endpoint.url, href('endpoints', endpoint.id)));
        item.appendChild(document.createTextNode(' · '));
        item.appendChild(el('span', endpoint.status, 'status-' + endpoint.status));
        if (endpoint.description) item.appendChild(document.createTextNode(' · ' + endpoint.description));
      });
    });
  }

  function setStatus(endpoint, status) {
    return call('PATCH', 'endpoints/' + endpoint.id, { status: status });
  }
  // Enable at once; disable once confirmed. then() redraws, and resolves with where the result is said
  // (the container, or what replaced it).
  function statusButton(endpoint, container, then) {
    var next = endpoint.status === 'disabled' ? 'active' : 'disabled';
    function change() {
      setStatus(endpoint, next).then(function (updated) {
        return then().then(function (place) { note(place || container, 'Endpoint ' + updated.id + ' is ' + updated.status + '.'); });
      }).catch(failNear(container));
    }
    return button(next === 'disabled' ? 'Disable' : 'Enable', next === 'disabled'
      ? confirmed('Disable ' + endpoint.url + '? It gets no deliveries until it is enabled again.', change)
      : change);
  }

  // A page of 50 endpoints, their 24 h ratios read two at a time: opening the page spends at most 50 of the
  // organization's requests (its rate limit is shared by every key), not one burst per endpoint it has.
  function loadEndpoints() {
    return loadApplications().then(function () { return call('GET', 'endpoints?limit=50'); }).then(function (page) {
      var body = clear('#endpoints tbody');
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No endpoints yet.'));
      appendEndpoints(page);
    });
  }
  function appendEndpoints(page) {
    var body = document.querySelector('#endpoints tbody');
    var ratios = [];
    page.data.forEach(function (endpoint) {
      endpointsById[endpoint.id] = endpoint;
      var row = el('tr');
      row.dataset.endpointId = endpoint.id;
      var url = el('td');
      url.appendChild(link(endpoint.url, href('endpoints', endpoint.id)));
      if (endpoint.description) url.appendChild(el('div', endpoint.description));
      row.appendChild(url);
      cell(row, appName(endpoint.app_id));
      cell(row, endpoint.status, 'status-' + endpoint.status);
      var success = cell(row, '…', 'ratio');
      ratios.push(function () {
        return call('GET', 'endpoints/' + endpoint.id + '/stats').then(function (stats) { success.textContent = successRatio(stats.totals); }).catch(function (error) {
          success.textContent = error.message;
        });
      });
      var actions = el('td', null, 'actions');
      actions.appendChild(actionsMenu([
        button('Open', function () { go(href('endpoints', endpoint.id)); }),
        button('Deliveries', function () { go(href('deliveries', null, { endpoint_id: endpoint.id })); }),
        statusButton(endpoint, actions, function () {
          return loadEndpoints().then(function () {
            return document.querySelector('#endpoints tbody tr[data-endpoint-id="' + endpoint.id + '"] td:last-child');
          });
        }),
      ]));
      row.appendChild(actions);
      body.appendChild(row);
    });
    pager('endpoints-more', page, function (cursor) {
      return call('GET', 'endpoints?limit=50&cursor=' + encodeURIComponent(cursor)).then(appendEndpoints);
    });
    inTurn(ratios, 2);
  }

  function filterText(filter) { return filter ? JSON.stringify(filter) : 'none: every message'; }
  // The circuit's state first (open until when), then its settings when they are the endpoint's own.
  function circuitText(endpoint) {
    var state = endpoint.circuit_state === 'open' ? 'open until ' + when(endpoint.circuit_open_until) : endpoint.circuit_state.replace('_', ' ');
    return state + (endpoint.circuit ? ' · ' + JSON.stringify(endpoint.circuit) : " · the service's settings");
  }

  function transformationText(transformation) {
    if (!transformation || transformation.code === null) return 'none';
    return (transformation.enabled ? 'on' : 'off') + ', changed ' + when(transformation.updated_at);
  }
  function headerLines(headers) {
    return Object.keys(headers || {}).map(function (name) { return name + ': ' + headers[name]; }).join('\\n');
  }

  // An endpoint's page: its health and chart first (the overview tab), what an operator changes behind the
  // other tabs. The tab is part of the address (?tab=policy), so a link or a reload opens it again.
  var ENDPOINT_TABS = ['overview', 'settings', 'security', 'transformation', 'policy'];
  var current = null;
  var currentTab = 'overview';
  function showEndpointTab(tab) {
    currentTab = ENDPOINT_TABS.indexOf(tab) >= 0 ? tab : 'overview';
    Array.prototype.forEach.call(document.querySelectorAll('#view-endpoint .tab-panel'), function (panel) { panel.hidden = panel.dataset.tab !== currentTab; });
    Array.prototype.forEach.call(document.querySelectorAll('#endpoint-tabs button'), function (tabButton) {
      tabButton.classList.toggle('current', tabButton.dataset.tab === currentTab);
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('#endpoint-tabs button'), function (tabButton) {
    tabButton.addEventListener('click', function () {
      showEndpointTab(tabButton.dataset.tab);
      // The address follows without a new render: replaceState fires no hashchange.
      history.replaceState(null, '', href('endpoints', current, currentTab === 'overview' ? {} : { tab: currentTab }));
    });
  });

  function detailList(container, pairs, classes) {
    pairs.forEach(function (pair) {
      container.appendChild(el('dt', pair[0]));
      container.appendChild(el('dd', pair[1], classes[pair[0]] || null));
    });
  }

  // tab: the tab to show; absent, the page keeps the one shown (a save redraws the page it was made on).
  function openEndpoint(id, tab) {
    if (tab || id !== current) showEndpointTab(tab || 'overview');
    current = id;
    return Promise.all([call('GET', 'endpoints/' + encodeURIComponent(id)), Object.keys(apps).length ? null : loadApplications()]).then(function (both) {
      var endpoint = both[0];
      endpointsById[endpoint.id] = endpoint;
      document.getElementById('endpoint-id').textContent = endpoint.id;
      var health = clear('#endpoint-health');
      health.appendChild(el('span', endpoint.url, 'url'));
      if (endpoint.type !== 'http') health.appendChild(el('span', endpoint.type, 'type'));
      health.appendChild(el('span', endpoint.status, 'status status-' + endpoint.status));
      if (endpoint.circuit_state !== 'closed') health.appendChild(el('span', 'circuit ' + circuitText(endpoint), 'circuit status-failing'));
      health.appendChild(el('span', '…', 'ratio'));
      health.appendChild(el('span', appName(endpoint.app_id), 'app'));
      var details = clear('#endpoint-details');
      detailList(details, [['URL', endpoint.url], ['Type', endpoint.type],
        ['Config', endpoint.config ? JSON.stringify(endpoint.config) : '—'],
        ['Application', appName(endpoint.app_id) + ' (' + endpoint.app_id + ')'],
        ['Status', endpoint.status], ['Description', endpoint.description || '—'],
        ['Event types', endpoint.event_types.length ? endpoint.event_types.join(', ') : 'all'],
        ['Ordering', endpoint.ordering], ['Rate limit', endpoint.rate_limit === null ? 'none' : endpoint.rate_limit + ' a second'],
        ['Retry schedule', endpoint.retry_schedule ? endpoint.retry_schedule.join(', ') : "the service's"],
        ['Circuit', circuitText(endpoint)],
        ['Headers', Object.keys(endpoint.headers || {}).length ? headerLines(endpoint.headers).split('\\n').join(', ') : 'none'],
        ['Filter', filterText(endpoint.filter)],
        ['Transformation', transformationText(endpoint.transformation)],
        ['Signatures', endpoint.signature_type],
        ['Client certificate', endpoint.tls && endpoint.tls.client_cert ? 'until ' + when(endpoint.tls.client_cert_not_after) : 'none'],
        ['OAuth2', endpoint.auth ? endpoint.auth.client_id + ' at ' + endpoint.auth.token_url : 'none'],
        ['Created', when(endpoint.created_at)]], { Status: 'status-' + endpoint.status, Filter: 'filter-value', Transformation: 'transformation-value' });
      var security = clear('#endpoint-security');
      detailList(security, [['Signatures', endpoint.signature_type === 'ed25519' ? 'ed25519 (asymmetric: receivers verify with the public key)' : 'HMAC-SHA256 with the signing secret'],
        ['Client certificate', endpoint.tls && endpoint.tls.client_cert ? 'until ' + when(endpoint.tls.client_cert_not_after) : 'none'],
        ['OAuth2', endpoint.auth ? endpoint.auth.client_id + ' at ' + endpoint.auth.token_url : 'none']], {});
      var controls = document.getElementById('endpoint-controls');
      controls.rate_limit.value = endpoint.rate_limit === null ? '' : String(endpoint.rate_limit);
      controls.retry_schedule.value = endpoint.retry_schedule ? endpoint.retry_schedule.join(', ') : '';
      controls.circuit.value = endpoint.circuit ? JSON.stringify(endpoint.circuit) : '';
      controls.ordering.value = endpoint.ordering;
      controls.headers.value = headerLines(endpoint.headers);
      clear('#endpoint-filter').appendChild(filterEditor(endpoint, function (filter) {
        return call('PATCH', 'endpoints/' + endpoint.id, { filter: filter }).then(function (saved) {
          document.querySelector('#endpoint-details .filter-value').textContent = filterText(saved.filter);
        });
      }, function (body) { return call('POST', 'endpoints/' + endpoint.id + '/filter-test', body); }));
      clear('#endpoint-transformation').appendChild(transformationEditor(endpoint, function (transformation) {
        return call('PATCH', 'endpoints/' + endpoint.id, { transformation: transformation }).then(function (saved) {
          document.querySelector('#endpoint-details .transformation-value').textContent = transformationText(saved.transformation);
        });
      }, function (body) { return call('POST', 'endpoints/' + endpoint.id + '/transformation/simulate', body); }));
      var actions = clear('#endpoint-actions');
      actions.appendChild(
        statusButton(endpoint, actions, function () {
          return openEndpoint(endpoint.id).then(function () { return actions; });
        }),
      );
      actions.appendChild(
        button(
          'Rotate secret',
          confirmed('Rotate the signing secret of ' + endpoint.url + '? The previous one keeps signing for a while; give the receiver the new one.', function () {
            call('POST', 'endpoints/' + endpoint.id + '/rotate-secret').then(function (result) {
              note(actions, (result.public_key ? 'New public key: ' + result.public_key : 'New signing secret (shown once): ' + result.signing_secret) +
                '\\nThe previous one keeps working until ' + when(result.previous_valid_until) + '.');
            }).catch(failNear(actions));
          }),
        ),
      );
      actions.appendChild(
        button(
          'Delete',
          confirmed('Delete ' + endpoint.url + '? Its pending deliveries fail, and it cannot be undone.', function () {
            call('DELETE', 'endpoints/' + endpoint.id).then(function () {
              delete endpointsById[endpoint.id];
              actions.textContent = '';
              actions.appendChild(link('Back to endpoints', href('endpoints')));
              note(actions, 'Endpoint ' + endpoint.id + ' deleted.');
            }).catch(failNear(actions));
          }),
        ),
      );
      actions.appendChild(button('Back to endpoints', function () { go(href('endpoints')); }));
      // A destination's URL, config and credentials (destination-settings.js) on the settings tab; an HTTP
      // receiver's TLS client certificate and OAuth2 client on the security tab.
      var destination = endpoint.type !== 'http';
      clear('#endpoint-destination-settings');
      var settings = clear(destination ? '#endpoint-destination-settings' : '#endpoint-receiver-settings');
      var saveThen = function (saved) {
        return function (body) {
          call('PATCH', 'endpoints/' + endpoint.id, body).then(function () {
            return openEndpoint(endpoint.id).then(function () { note(settings, saved); });
          }).catch(failNear(form));
        };
      };
      var form = destination
        ? window.HeraldDestinations.editor(endpoint, saveThen('Destination saved.'))
        : window.HeraldReceiverSettings.form(endpoint, saveThen('Receiver settings saved.'));
      if (destination) settings.appendChild(el('h3', 'Destination'));
      else settings.appendChild(el('h3', 'Receiver security: mutual TLS and OAuth2'));
      settings.appendChild(form);
      document.getElementById('endpoint-all-deliveries').href = href('deliveries', null, { endpoint_id: endpoint.id });
      var since = document.querySelector('#recover-endpoint input[name=since]');
      since.value = localOf(new Date(Date.now() - 86400000).toISOString());
      return Promise.all([drawEndpointChart(endpoint.id), loadEndpointDeliveries(endpoint.id), loadHistory('#endpoint-history', endpoint.id)]);
    });
  }

  function drawEndpointChart(id) {
    return call('GET', 'endpoints/' + id + '/stats').then(function (stats) {
      window.HeraldChart.draw(document.getElementById('endpoint-chart'), stats);
      var ratio = document.querySelector('#endpoint-health .ratio');
      if (ratio) ratio.textContent = successRatio(stats.totals) + ' succeeded, last 24 h';
    });
  }

  function loadEndpointDeliveries(id) {
    return call('GET', 'deliveries?limit=20&endpoint_id=' + encodeURIComponent(id)).then(function (page) {
      var body = clear('#endpoint-deliveries tbody');
      if (page.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', 'No deliveries yet.'));
      page.data.forEach(function (delivery) {
        body.appendChild(deliveryRow(delivery, { endpoint: false, after: function () { return drawEndpointChart(id); } }));
      });
    });
  }

  // Rate limit, retry schedule, ordering and headers, saved together.
  document.getElementById('endpoint-controls').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var headers = {};
    form.headers.value.split('\\n').forEach(function (line) {
      var at = line.indexOf(':');
      if (line.trim() && at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    });
    var rate = form.rate_limit.value.trim();
    var schedule = form.retry_schedule.value.split(',').map(function (step) { return step.trim(); }).filter(Boolean);
    var circuit = null;
    if (form.circuit.value.trim()) {
      try { circuit = JSON.parse(form.circuit.value); } catch (error) { return note(form, 'Circuit breaker: not JSON (' + error.message + ')', true); }
    }
    var id = current;
    call('PATCH', 'endpoints/' + id, { rate_limit: rate === '' ? null : Number(rate), retry_schedule: schedule.length ? schedule : null, circuit: circuit, ordering: form.ordering.value, headers: headers }).then(function () {
      return openEndpoint(id);
    }).then(function () { note(form, 'Delivery controls saved.'); }).catch(failNear(form));
  });

  document.getElementById('recover-endpoint').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var since = isoOf(form.since.value);
    if (!window.confirm('Give every failed delivery of messages since ' + when(since) + ' a new attempt?')) return;
    call('POST', 'endpoints/' + current + '/recover', { since: since }).then(function (task) {
      note(form, 'Recovery started (' + task.id + '): failed deliveries of messages since ' + when(since) + ' get a new attempt.');
    }).catch(failNear(form));
  });

  document.getElementById('add-application').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    call('POST', 'applications', { name: form.elements.namedItem('name').value }).then(function (app) {
      form.reset();
      return loadApplications().then(function () {
        note(form, 'Application ' + app.id + ' created. Its customer portal (shown once): ' + location.origin + app.portal_path);
      });
    }).catch(failNear(form));
  });

  var addEndpoint = document.getElementById('add-endpoint');
  var chosenDestination = window.HeraldDestinations.typeChooser(addEndpoint, addEndpoint.querySelector('button[type=submit]'));
  addEndpoint.addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var body = Object.assign({ app_id: form.app_id.value, url: form.url.value }, chosenDestination());
    if (form.description.value) body.description = form.description.value;
    call('POST', 'endpoints', body).then(function (endpoint) {
      form.reset();
      return loadEndpoints().then(function () {
        note(form, 'Endpoint ' + endpoint.id + ' created. ' + (endpoint.signing_secret ? 'Its signing secret (shown once): ' + endpoint.signing_secret : 'Its public key: ' + endpoint.public_key));
      });
    }).catch(failNear(form));
  });
`;
