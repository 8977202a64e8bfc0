import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { ConfigError, loadConfig } from '../../../src/config.js';

// The address of a portal link (issue 42, finding 11): under HERALD_PUBLIC_URL when it is set; otherwise
// under the request's Host only when that is a host name or an address with an optional port. A hostile
// Host never reaches the link.

const HOSTILE = 'evil.example"><script>alert(1)</script>';

/** POST app-portal-access with `host` as the Host header (fetch cannot set it). */
function portalAccess(service: TestService, key: string, appId: string, host: string) {
  const url = new URL(`${service.url}/api/v1/auth/app-portal-access/${appId}`);
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: { host, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

async function world(t: { after: (fn: () => Promise<void>) => void }, env: Record<string, string> = {}) {
  const service = await startTestService(env);
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Linked' })).body;
  return { service, key: api.key!, appId: app.id as string };
}

test('without HERALD_PUBLIC_URL a hostile Host is refused and not echoed; a host name is used', async (t) => {
  const { service, key, appId } = await world(t);
  for (const host of [HOSTILE, 'evil.example/path', 'user@evil.example', 'evil.example:99999']) {
    const refused = await portalAccess(service, key, appId, host);
    assert.equal(refused.status, 422, `${host}: ${refused.text}`);
    assert.match(refused.text, /Host header/);
    assert.ok(!refused.text.includes('evil.example'), `${host} is echoed: ${refused.text}`);
  }
  const named = await portalAccess(service, key, appId, 'hooks.example:8443');
  assert.equal(named.status, 200, named.text);
  assert.match(JSON.parse(named.text).url, /^http:\/\/hooks\.example:8443\/portal\/[A-Za-z0-9_-]+$/);
  const addressed = await portalAccess(service, key, appId, '[::1]:8080');
  assert.match(JSON.parse(addressed.text).url, /^http:\/\/\[::1\]:8080\/portal\//);
});

test('with HERALD_PUBLIC_URL every link starts with it, whatever the Host', async (t) => {
  const { service, key, appId } = await world(t, { HERALD_PUBLIC_URL: 'https://hooks.example.com/herald/' });
  for (const host of [HOSTILE, 'other.example', new URL(service.url).host]) {
    const made = await portalAccess(service, key, appId, host);
    assert.equal(made.status, 200, made.text);
    const { url, token } = JSON.parse(made.text);
    assert.equal(url, `https://hooks.example.com/herald/portal/${token}`);
    assert.ok(!made.text.includes('evil.example'));
    // The token is the link's: it opens the portal here.
    assert.equal((await fetch(`${service.url}/portal/${token}`)).status, 200);
  }
});

test('HERALD_PUBLIC_URL is an http(s) URL with a host and no credentials, query or fragment', () => {
  const base = { HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_DATA_DIR: '/tmp/herald-config-test' };
  assert.equal(loadConfig(base).publicUrl, null);
  assert.equal(
    loadConfig({ ...base, HERALD_PUBLIC_URL: 'https://hooks.example.com/' }).publicUrl,
    'https://hooks.example.com',
  );
  assert.equal(
    loadConfig({ ...base, HERALD_PUBLIC_URL: 'http://10.0.0.5:8080/herald' }).publicUrl,
    'http://10.0.0.5:8080/herald',
  );
  for (const bad of [
    'hooks.example.com',
    'ftp://hooks.example.com',
    'javascript:alert(1)',
    'https://hooks.example.com/?a=1',
    'https://hooks.example.com/?',
    'https://hooks.example.com/#top',
    'https://user:secret@hooks.example.com',
    'https://',
  ])
    assert.throws(
      () => loadConfig({ ...base, HERALD_PUBLIC_URL: bad }),
      (error: Error) => error instanceof ConfigError && /HERALD_PUBLIC_URL/.test(error.message),
      bad,
    );
});
