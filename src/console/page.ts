// The operator console at /console: static HTML, CSS and a script that signs in with an API key and renders
// that key's organization and environment from the public /api/v1 routes. The key lives in the tab's
// sessionStorage only (never a URL or a cookie) and goes out as `Authorization: Bearer`. No framework and no
// build step; everything read from the API is inserted as text, never as HTML.

import { CHART_CSS } from './chart.js';
import { ANSWERS_CSS } from './answers.js';
import { DOM_HELPERS_CSS } from './dom-helpers.js';
import { FILTER_CSS } from './filter-editor.js';
import { TRANSFORMATION_CSS } from './transformation-editor.js';

export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Herald console</title>
<link rel="icon" type="image/svg+xml" href="/favicon.svg">
<link rel="stylesheet" href="/console-assets/console.css">
</head>
<body>
<header><h1>Herald console</h1><span id="mode" class="badge" hidden></span>
  <form id="search" hidden><input name="q" aria-label="Search" autocomplete="off" placeholder="evt_…, dlv_…, ep_…, app_… or an application uid"><button type="submit">Open</button><span id="search-note" role="status" hidden></span></form>
  <button id="sign-out" type="button" hidden>Sign out</button></header>
<main>
  <p id="notice" role="status" hidden></p>
  <section id="sign-in-section">
    <h2>Sign in</h2>
    <form id="sign-in">
      <label>API key <input name="key" type="password" autocomplete="off" required placeholder="sk_test_… or sk_live_…"></label>
      <p class="hint">The key stays in this tab (session storage) and is sent only to this server's API.</p>
      <button type="submit">Sign in</button>
    </form>
  </section>
  <div id="signed-in" hidden>
    <nav id="tabs">
      <button type="button" data-view="overview">Overview</button>
      <button type="button" data-view="applications">Applications</button>
      <button type="button" data-view="endpoints">Endpoints</button>
      <button type="button" data-view="messages">Messages</button>
      <button type="button" data-view="deliveries">Deliveries</button>
      <button type="button" data-view="catalog">Event catalog</button>
      <button type="button" data-view="operational">Operational endpoints</button>
      <button type="button" data-view="keys">API keys</button>
      <button type="button" data-view="audit">Audit log</button>
    </nav>
    <section id="view-overview" class="view" hidden>
      <h2>Overview</h2>
      <div id="overview-start"></div>
      <div class="overview-grid">
        <div><h3>Endpoints that need attention</h3><div id="overview-endpoints"></div></div>
        <div><h3>Failed deliveries</h3><div id="overview-failed"></div><div id="overview-failed-endpoints"></div></div>
        <div><h3>Open circuits</h3><div id="overview-circuits"></div></div>
        <div><h3>Busiest event types, last 24 hours</h3><div id="overview-event-types"></div></div>
      </div>
    </section>
    <section id="view-applications" class="view" hidden>
      <h2>Applications</h2>
      <table id="applications" class="compact"><thead><tr><th>Name</th><th>UID</th><th>Created</th><th>Id</th></tr></thead><tbody></tbody></table>
      <button type="button" id="applications-more" class="more" hidden>More</button>
      <form id="add-application">
        <h3>Create an application</h3>
        <label>Name <input name="name" required maxlength="256"></label>
        <button type="submit">Create application</button>
      </form>
    </section>
    <section id="view-application" class="view" hidden>
      <h2>Application <span id="application-name"></span></h2>
      <dl id="application-details"></dl>
      <p id="application-links"></p>
      <h3>Attempts per hour by event type, last 24 h</h3>
      <div id="application-chart"></div>
      <h3>Endpoints</h3>
      <div id="application-endpoints"></div>
      <h3>History</h3>
      <div id="application-history"></div>
    </section>
    <section id="view-endpoints" class="view" hidden>
      <h2>Endpoints</h2>
      <table id="endpoints" class="compact"><thead><tr><th>URL</th><th>Application</th><th>Status</th><th>Success, last 24 h</th><th></th></tr></thead><tbody></tbody></table>
      <button type="button" id="endpoints-more" class="more" hidden>More</button>
      <form id="add-endpoint">
        <h3>Create an endpoint</h3>
        <label>Application <select name="app_id" required></select></label>
        <label>URL <input name="url" required placeholder="https://example.com/webhooks or a broker's address"></label>
        <label>Description <input name="description" maxlength="1024"></label>
        <button type="submit">Create endpoint</button>
      </form>
    </section>
    <section id="view-endpoint" class="view" hidden>
      <h2>Endpoint <code id="endpoint-id"></code></h2>
      <p id="endpoint-health"></p>
      <div id="endpoint-actions"></div>
      <nav id="endpoint-tabs" class="subtabs">
        <button type="button" data-tab="overview">Overview</button>
        <button type="button" data-tab="settings">Settings</button>
        <button type="button" data-tab="security">Security</button>
        <button type="button" data-tab="transformation">Transformation</button>
        <button type="button" data-tab="policy">Policy</button>
      </nav>
      <div class="tab-panel" data-tab="overview">
        <h3>Attempts per hour, last 24 h</h3>
        <div id="endpoint-chart"></div>
        <h3>Recent deliveries</h3>
        <table id="endpoint-deliveries" class="compact"><thead><tr><th>Status</th><th>Event type</th><th>Attempts</th><th>Last answer</th><th>Created</th><th></th></tr></thead><tbody></tbody></table>
        <p><a id="endpoint-all-deliveries" href="#/deliveries">Every delivery to this endpoint</a></p>
        <h3>History</h3>
        <div id="endpoint-history"></div>
      </div>
      <div class="tab-panel" data-tab="settings" hidden>
        <dl id="endpoint-details"></dl>
        <div id="endpoint-destination-settings"></div>
        <h3>Content filter</h3>
        <div id="endpoint-filter"></div>
      </div>
      <div class="tab-panel" data-tab="security" hidden>
        <dl id="endpoint-security"></dl>
        <div id="endpoint-secret"></div>
        <div id="endpoint-receiver-settings"></div>
      </div>
      <div class="tab-panel" data-tab="transformation" hidden>
        <div id="endpoint-transformation"></div>
      </div>
      <div class="tab-panel" data-tab="policy" hidden>
        <form id="endpoint-controls">
          <h3>Delivery controls</h3>
          <label>Rate limit (requests a second; empty: none) <input name="rate_limit" type="number" min="1" max="10000"></label>
          <label>Retry schedule (the delay before each attempt, comma-separated, such as 0s, 30s, 5m, 2h; each at most 7d, at most 20; empty: the service's) <input name="retry_schedule" placeholder="the service's schedule"></label>
          <label>Circuit breaker (JSON such as {"failure_ratio": 0.5, "min_attempts": 20, "window": "60s", "cooldown": "30s"}, or {"enabled": false}; empty: the service's) <input name="circuit" placeholder="the service's settings"></label>
          <label>Ordering <select name="ordering"><option value="unordered">Unordered (in parallel)</option><option value="fifo">FIFO (in order, one at a time)</option></select></label>
          <label>Headers (one "Name: value" a line; a credential shows as &lt;redacted&gt; and, left so, keeps its value) <textarea name="headers" rows="3"></textarea></label>
          <button type="submit">Save controls</button>
        </form>
        <form id="recover-endpoint">
          <h3>Recover</h3>
          <label>Give every failed delivery of messages since <input name="since" type="datetime-local" required></label>
          <button type="submit">Recover failed deliveries</button>
        </form>
      </div>
    </section>
    <section id="view-messages" class="view" hidden>
      <h2>Messages</h2>
      <form id="message-filter" class="filters">
        <label>Application <select name="app_id"><option value="">All</option></select></label>
        <label>Event type <select name="event_type"><option value="">All</option></select></label>
        <label>Since <input name="since" type="datetime-local"></label>
        <label>Until <input name="until" type="datetime-local"></label>
        <button type="submit">Filter</button>
      </form>
      <table id="messages" class="compact"><thead><tr><th>Event type</th><th>Application</th><th>Created</th><th>Message</th><th></th></tr></thead><tbody></tbody></table>
      <button type="button" id="messages-more" class="more" hidden>More</button>
    </section>
    <section id="view-message" class="view" hidden>
      <h2>Message <code id="message-id"></code></h2>
      <dl id="message-details"></dl>
      <div id="message-payload"></div>
      <h3>Deliveries</h3>
      <table id="message-deliveries" class="compact"><thead><tr><th>Status</th><th>Event type</th><th>Endpoint</th><th>Attempts</th><th>Last answer</th><th>Created</th><th></th></tr></thead><tbody></tbody></table>
      <button type="button" id="message-deliveries-more" class="more" hidden>More deliveries</button>
    </section>
    <section id="view-deliveries" class="view" hidden>
      <h2>Deliveries</h2>
      <form id="delivery-filter" class="filters">
        <label>Status <select name="status"><option value="">All</option><option value="pending">pending</option><option value="success">success</option><option value="failed">failed</option><option value="disabled">disabled</option></select></label>
        <label>Endpoint <select name="endpoint_id"><option value="">All</option></select></label>
        <label>Event type <select name="event_type"><option value="">All</option></select></label>
        <label>Since <input name="since" type="datetime-local"></label>
        <label>Until <input name="until" type="datetime-local"></label>
        <button type="submit">Filter</button>
      </form>
      <table id="deliveries" class="compact"><thead><tr><th>Status</th><th>Event type</th><th>Endpoint</th><th>Attempts</th><th>Last answer</th><th>Created</th><th></th></tr></thead><tbody></tbody></table>
      <button type="button" id="deliveries-more" class="more" hidden>More</button>
    </section>
    <section id="view-delivery" class="view" hidden>
      <h2>Delivery <code id="delivery-id"></code></h2>
      <div id="delivery-detail"></div>
      <div id="delivery-inspector"></div>
    </section>
    <section id="view-catalog" class="view" hidden>
      <h2>Event catalog</h2>
      <table id="catalog"><thead><tr><th>Name</th><th>Description</th><th>Schema</th><th>Version</th><th></th></tr></thead><tbody></tbody></table>
      <button type="button" id="new-event-type">New event type</button>
      <form id="event-type-form" hidden>
        <h3 id="event-type-form-title">New event type</h3>
        <label>Name <input name="name" required maxlength="255" placeholder="invoice.paid"></label>
        <label>Description <input name="description" maxlength="1024"></label>
        <label>JSON Schema (empty: none) <textarea name="schema" rows="8" spellcheck="false"></textarea></label>
        <label>Example payload (what a test event sends) <textarea name="example_json" rows="5" spellcheck="false"></textarea></label>
        <button type="submit">Save event type</button>
      </form>
    </section>
    <section id="view-operational" class="view" hidden>
      <h2>Operational endpoints</h2>
      <p class="hint">Herald's own webhooks to operators when deliveries go wrong.</p>
      <div id="operational"></div>
      <button type="button" id="new-operational">New operational endpoint</button>
      <form id="operational-form" hidden>
        <h3 id="operational-form-title">New operational endpoint</h3>
        <label>URL <input name="url" type="url" required placeholder="https://ops.example.com/herald"></label>
        <label>Description <input name="description" maxlength="1024"></label>
        <fieldset id="operational-event-types"><legend>Event types (none selected: all)</legend></fieldset>
        <button type="submit">Save operational endpoint</button>
      </form>
    </section>
    <section id="view-audit" class="view" hidden>
      <h2>Audit log</h2>
      <p class="hint">Every change of this environment's configuration, newest first: who made it, and each field before and after (secrets redacted).</p>
      <form id="audit-filter" class="filters">
        <label>Resource id <input name="resource_id" placeholder="ep_… or app_…"></label>
        <label>Action <input name="action" placeholder="endpoint.updated"></label>
        <label>Actor id <input name="actor_id" placeholder="key_…"></label>
        <button type="submit">Filter</button>
      </form>
      <div id="audit"></div>
    </section>
    <section id="view-keys" class="view" hidden>
      <h2>API keys</h2>
      <p class="hint">Give each service a key that does only its job: an emitter key emits and reads its messages back, a reader key only reads, a writer key changes everything but keys and operational endpoints.</p>
      <table id="keys"><thead><tr><th>Name</th><th>Role</th><th>Applications</th><th>Expires</th><th>Created</th><th>Id</th><th></th></tr></thead><tbody></tbody></table>
      <form id="key-form">
        <h3>Make a key</h3>
        <label>Name <input name="name" maxlength="256" placeholder="billing service"></label>
        <label>Role <select name="role"></select></label>
        <fieldset id="key-apps"></fieldset>
        <label>Expires (empty: never) <input name="expires_at" type="datetime-local"></label>
        <button type="submit">Make key</button>
      </form>
    </section>
  </div>
</main>
<script src="/console-assets/chart.js"></script>
<script src="/console-assets/receiver-settings.js"></script>
<script src="/console-assets/destination-settings.js"></script>
<script src="/console-assets/console.js"></script>
</body>
</html>`;

export const CONSOLE_CSS = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d2433; background: #f6f7fb; }
header { display: flex; align-items: center; gap: 1rem; padding: 1rem 2rem; background: #1d2433; color: #fff; }
header h1 { font-size: 1.2rem; margin: 0; }
header #sign-out { margin-left: auto; }
.badge { padding: .1rem .5rem; border-radius: 1rem; font-size: .8rem; background: #ffd166; color: #1d2433; }
.badge.live { background: #ff8787; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 2rem 3rem; }
section { background: #fff; border: 1px solid #e3e6ef; border-radius: 8px; padding: 1rem 1.25rem; margin-top: 1rem; }
nav { display: flex; gap: .5rem; margin-top: 1rem; flex-wrap: wrap; }
nav button.current { background: #1d2433; color: #fff; }
nav.subtabs { margin: .8rem 0 .4rem; border-bottom: 1px solid #e3e6ef; gap: 0; } nav.subtabs button { border: 0; border-bottom: 2px solid transparent; border-radius: 0; margin: 0; padding: .4rem .9rem; background: none; }
nav.subtabs button.current { background: none; color: #1d2433; border-bottom-color: #3559e0; font-weight: 600; }
#endpoint-health { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; margin: .2rem 0 .6rem; } #endpoint-health .url { font-weight: 600; word-break: break-all; }
h2 { font-size: 1.05rem; margin-top: 0; } h3 { font-size: .95rem; }
table { width: 100%; border-collapse: collapse; } th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #eef0f5; vertical-align: top; }
td code, code { font-size: .85rem; word-break: break-all; }
label { display: block; margin: .4rem 0; } input[type=url], input[type=password], input[name=description], input[name=name] { width: 100%; max-width: 520px; padding: .3rem; }
button { cursor: pointer; padding: .3rem .7rem; border-radius: 5px; border: 1px solid #9aa3b8; background: #fff; margin-right: .3rem; }
button[type=submit] { background: #3559e0; color: #fff; border-color: #3559e0; }
.hint { color: #4a5568; font-size: .85rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; } dt { color: #4a5568; } dd { margin: 0; }
.status-active, .status-success { color: #147a3d; } .status-failing, .status-pending { color: #a15c00; } .status-disabled, .status-failed { color: #b42318; }
#notice { padding: .6rem .8rem; background: #eef4ff; border: 1px solid #b8ccff; border-radius: 6px; white-space: pre-wrap; }
#notice.error { background: #fff1f0; border-color: #ffb4ab; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; } .sides .pane { min-width: 0; }
.sides pre { background: #f6f7fb; border: 1px solid #e3e6ef; border-radius: 6px; padding: .5rem; max-height: 24rem; overflow: auto; font-size: .8rem; white-space: pre-wrap; word-break: break-word; }
.pane-label { font-size: .85rem; color: #4a5568; margin-top: .4rem; } .attempt-picker button.current { outline: 2px solid #3559e0; }
.overview-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: .5rem 1.5rem; }
.overview-grid ul { padding-left: 1.1rem; margin: .3rem 0; } .failed-count { font-weight: 600; }
td.changes { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: .8rem; word-break: break-word; }
.delivery { border-top: 1px solid #eef0f5; padding: .5rem 0; } .attempts { font-size: .85rem; color: #4a5568; margin: .3rem 0 0 1rem; }
.trace { font-size: .85rem; color: #4a5568; margin: .3rem 0 0 1rem; }
header #search { display: flex; gap: .3rem; align-items: center; flex: 1; max-width: 560px; }
header #search input { flex: 1; padding: .3rem; }
#search-note { font-size: .85rem; padding: .2rem .5rem; border-radius: 5px; background: #fff1f0; color: #b42318; }
.filters { display: flex; flex-wrap: wrap; gap: .3rem 1rem; align-items: end; margin-bottom: .5rem; }
.filters label { margin: 0; }
textarea { font: .85rem ui-monospace, monospace; width: 100%; max-width: 640px; }
.delivery-head { font-size: .95rem; } .delivery-head .event-type { font-weight: 600; }
.delivery-ids { font-size: .8rem; color: #4a5568; margin: .2rem 0 0 1rem; }
${DOM_HELPERS_CSS}
${ANSWERS_CSS}
${FILTER_CSS}
${TRANSFORMATION_CSS}
${CHART_CSS}`;
