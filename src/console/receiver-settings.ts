// The form for an endpoint's enterprise receiver settings, shared by the console and the portal: its `tls`
// (client certificate, client key, CA bundle) and its `auth` (OAuth2 client credentials). A stored key or
// secret shows as "<redacted>", and left as it is the update keeps it. A same-origin script that builds
// the form with the DOM, every value set as text (the pages' strict Content-Security-Policy holds).

export const RECEIVER_SETTINGS_JS = `
'use strict';
(function () {
  function field(form, label, name, multiline, value) {
    var wrap = document.createElement('label');
    wrap.textContent = label + ' ';
    var input = document.createElement(multiline ? 'textarea' : 'input');
    input.name = name;
    if (multiline) input.rows = 3;
    if (name === 'client_secret') input.type = 'password';
    input.value = value == null ? '' : String(value);
    wrap.appendChild(input);
    form.appendChild(wrap);
    return input;
  }

  /** The request body's tls and auth from the form: empty parts are null (removed). */
  function read(form) {
    var v = function (name) { var value = form.elements.namedItem(name).value.trim(); return value === '' ? null : value; };
    var tls = v('client_cert') || v('client_key') || v('ca')
      ? { client_cert: v('client_cert'), client_key: v('client_key'), ca: v('ca') }
      : null;
    var auth = v('token_url') ? {
      type: 'oauth2_client_credentials', token_url: v('token_url'), client_id: v('client_id') || '',
      client_secret: v('client_secret') || '', scope: v('scope'), audience: v('audience'),
      client_auth: form.elements.namedItem('client_auth').value,
    } : null;
    return { tls: tls, auth: auth };
  }

  /** A form for the endpoint's settings; save(body) sends {tls, auth} and returns a promise. */
  function form(endpoint, save) {
    var tls = endpoint.tls || {};
    var auth = endpoint.auth || {};
    var f = document.createElement('form');
    f.className = 'receiver-settings-form';
    var mtls = document.createElement('fieldset');
    var legend = document.createElement('legend');
    legend.textContent = 'Mutual TLS (PEM)';
    mtls.appendChild(legend);
    field(mtls, 'Client certificate', 'client_cert', true, tls.client_cert);
    field(mtls, 'Client key', 'client_key', true, tls.client_key);
    field(mtls, 'CA bundle for the receiver', 'ca', true, tls.ca);
    if (tls.client_cert_not_after) {
      var expiry = document.createElement('div');
      expiry.className = 'cert-expiry';
      expiry.textContent = 'Client certificate expires ' + new Date(tls.client_cert_not_after).toLocaleString();
      mtls.appendChild(expiry);
    }
    f.appendChild(mtls);
    var oauth = document.createElement('fieldset');
    legend = document.createElement('legend');
    legend.textContent = 'OAuth2 client credentials';
    oauth.appendChild(legend);
    field(oauth, 'Token URL', 'token_url', false, auth.token_url);
    field(oauth, 'Client ID', 'client_id', false, auth.client_id);
    field(oauth, 'Client secret', 'client_secret', false, auth.client_secret);
    field(oauth, 'Scope', 'scope', false, auth.scope);
    field(oauth, 'Audience', 'audience', false, auth.audience);
    var method = document.createElement('label');
    method.textContent = 'Client authentication ';
    var select = document.createElement('select');
    select.name = 'client_auth';
    ['basic', 'post'].forEach(function (name) {
      var option = document.createElement('option');
      option.value = name;
      option.textContent = name === 'basic' ? 'HTTP Basic' : 'In the form body';
      select.appendChild(option);
    });
    select.value = auth.client_auth || 'basic';
    method.appendChild(select);
    oauth.appendChild(method);
    f.appendChild(oauth);
    var button = document.createElement('button');
    button.type = 'submit';
    button.textContent = 'Save receiver settings';
    f.appendChild(button);
    f.addEventListener('submit', function (event) {
      event.preventDefault();
      save(read(f));
    });
    return f;
  }

  window.HeraldReceiverSettings = { form: form };
})();
`;
