// The console's script (served as /console-assets/console.js). It calls /api/v1 with the key kept in
// sessionStorage, renders every value with textContent, and adds no inline handlers: the page's
// Content-Security-Policy allows scripts from this origin only. It is written in parts, one closure:
// this file (the API calls, signing in and out), the router (src/console/router.ts), the views of
// applications and endpoints (views.ts), of messages and deliveries (delivery-views.ts), and the catalog
// and operational endpoint editors (editors.ts).

import { ANSWERS_JS } from './answers.js';
import { DELIVERY_VIEWS_JS } from './delivery-views.js';
import { DOM_HELPERS_JS } from './dom-helpers.js';
import { EDITORS_JS } from './editors.js';
import { FILTER_EDITOR_JS } from './filter-editor.js';
import { KEYS_JS } from './keys.js';
import { AUDIT_JS } from './audit.js';
import { OVERVIEW_JS } from './overview.js';
import { INSPECTOR_JS } from './inspector.js';
import { TRANSFORMATION_EDITOR_JS } from './transformation-editor.js';
import { ROUTER_JS } from './router.js';
import { VIEWS_JS } from './views.js';

const CORE_JS = `
  var KEY = 'herald.console.key';
  var notice = document.getElementById('notice');
  var apps = {};
  var endpointsById = {};

  // The notice under the header: what a view could not load, and a refused key.
  function show(text, isError) {
    notice.textContent = text;
    notice.className = isError ? 'error' : '';
    notice.hidden = false;
  }
  function fail(error) { show(error.message, true); }
  // An action's error, beside the control that caused it.
  function failNear(container) { return function (error) { note(container, error.message, true); }; }

  function key() { return sessionStorage.getItem(KEY); }

  // A call to the API with the key; resolves with {status, data}; rejects with the error envelope's message.
  function request(method, path, body) {
    var init = { method: method, headers: { authorization: 'Bearer ' + key() }, cache: 'no-store' };
    if (body !== undefined) { init.headers['content-type'] = 'application/json'; init.body = JSON.stringify(body); }
    return fetch('/api/v1/' + path, init).then(function (response) {
      if (response.status === 204) return { status: 204, data: null };
      return response.json().then(function (data) { return { status: response.status, data: data }; }, function () {
        return { status: response.status, data: null };
      });
    });
  }
  function refused(reply) {
    if (reply.status === 401) { signOut(); return new Error('The API key was refused: sign in again.'); }
    return new Error((reply.data && reply.data.error && reply.data.error.message) || ('HTTP ' + reply.status));
  }
  function call(method, path, body) {
    return request(method, path, body).then(function (reply) {
      if (reply.status >= 400) throw refused(reply);
      return reply.data;
    });
  }

${DOM_HELPERS_JS}
${FILTER_EDITOR_JS}
${TRANSFORMATION_EDITOR_JS}
${ANSWERS_JS}
  function cell(row, text, className) { var td = el('td', text, className); row.appendChild(td); return td; }
  function codeCell(row, text) { var td = el('td'); td.appendChild(el('code', text)); row.appendChild(td); return td; }
  function when(iso) { return iso ? new Date(iso).toLocaleString() : '—'; }
  function clear(selector) { var node = document.querySelector(selector); node.textContent = ''; return node; }
  function query(params) {
    var parts = Object.keys(params).filter(function (name) { return params[name]; }).map(function (name) {
      return encodeURIComponent(name) + '=' + encodeURIComponent(params[name]);
    });
    return parts.length ? '?' + parts.join('&') : '';
  }
  // A datetime-local input's value as an ISO time, and back.
  function isoOf(local) { return local ? new Date(local).toISOString() : ''; }
  function localOf(iso) { return iso ? new Date(new Date(iso).getTime() - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16) : ''; }

  // Runs the jobs (functions returning promises) at most width at a time.
  function inTurn(jobs, width) {
    var next = 0;
    function run() {
      if (next >= jobs.length) return Promise.resolve();
      var job = jobs[next++];
      return job().then(run, run);
    }
    var runs = [];
    for (var i = 0; i < width; i++) runs.push(run());
    return Promise.all(runs);
  }

  // A "More" button reads the next page of a list with its cursor; hidden when there is none.
  function pager(buttonId, page, loadNext) {
    var more = document.getElementById(buttonId);
    var fresh = more.cloneNode(true);
    more.parentNode.replaceChild(fresh, more);
    fresh.hidden = !page.has_more;
    if (page.has_more) fresh.addEventListener('click', function () { loadNext(page.next_cursor).catch(failNear(fresh.parentNode)); });
  }
  // A filtered list read a page at a time: each page's rows (rowOf) appended to the table body, emptyText
  // when the first page has none, and the More button (pager) reading the next.
  function pagedRows(path, filters, tbodySelector, emptyText, rowOf, buttonId) {
    var body = clear(tbodySelector);
    function page(cursor) {
      filters.cursor = cursor;
      return call('GET', path + query(filters)).then(function (result) {
        if (!cursor && result.data.length === 0) body.appendChild(el('tr')).appendChild(el('td', emptyText));
        result.data.forEach(function (item) { body.appendChild(rowOf(item)); });
        pager(buttonId, result, page);
      });
    }
    return page('');
  }
`;

const SESSION_JS = `
  function signedIn() {
    var live = /^sk_live_/.test(key());
    var mode = document.getElementById('mode');
    mode.textContent = live ? 'Live' : 'Test';
    mode.className = live ? 'badge live' : 'badge';
    mode.hidden = false;
    document.getElementById('sign-in-section').hidden = true;
    document.getElementById('signed-in').hidden = false;
    document.getElementById('sign-out').hidden = false;
    document.getElementById('search').hidden = false;
    // The address opened before signing in is the view shown now.
    return render();
  }

  function signOut() {
    sessionStorage.removeItem(KEY);
    document.getElementById('signed-in').hidden = true;
    document.getElementById('sign-out').hidden = true;
    document.getElementById('search').hidden = true;
    document.getElementById('mode').hidden = true;
    document.getElementById('sign-in-section').hidden = false;
  }
  document.getElementById('sign-out').addEventListener('click', function () { signOut(); notice.hidden = true; });

  document.getElementById('sign-in').addEventListener('submit', function (event) {
    event.preventDefault();
    var form = event.target;
    var candidate = form.key.value.trim();
    form.reset();
    sessionStorage.setItem(KEY, candidate);
    // The key is checked by one read before anything is shown.
    call('GET', 'applications?limit=1').then(function () {
      notice.hidden = true;
      return signedIn();
    }).catch(fail);
  });

  if (key()) signedIn().catch(fail);
`;

export const CONSOLE_JS = `
'use strict';
(function () {
${CORE_JS}
${ROUTER_JS}
${VIEWS_JS}
${DELIVERY_VIEWS_JS}
${EDITORS_JS}
${KEYS_JS}
${AUDIT_JS}
${OVERVIEW_JS}
${INSPECTOR_JS}
${SESSION_JS}
})();
`;
