import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config.js';

// HERALD_METRICS_TOKEN and HERALD_METRICS_PORT are read and checked with the other settings: a bad value
// stops start-up with one line naming the setting.

test('metrics settings: defaults, accepted values, and bad values refused by name', (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-metrics-config-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const load = (env: Record<string, string>) =>
    loadConfig({ HERALD_DATA_DIR: dataDir, HERALD_SECRET_KEY: 'k'.repeat(32), ...env });

  const defaults = load({});
  assert.equal(defaults.metricsToken, null);
  assert.equal(defaults.metricsPort, null);
  const set = load({ HERALD_METRICS_TOKEN: 'a-token-of-16-chars!', HERALD_METRICS_PORT: '9464' });
  assert.equal(set.metricsToken, 'a-token-of-16-chars!');
  assert.equal(set.metricsPort, 9464);
  assert.equal(load({ HERALD_METRICS_PORT: '0' }).metricsPort, 0);
  assert.equal(load({ HERALD_METRICS_TOKEN: '', HERALD_METRICS_PORT: '' }).metricsToken, null);

  for (const token of ['short', 'has a space in the middle', `${'x'.repeat(20)}\n`, 'é'.repeat(20), 'x'.repeat(513)])
    assert.throws(
      () => load({ HERALD_METRICS_TOKEN: token }),
      (error: Error) => error instanceof ConfigError && /^HERALD_METRICS_TOKEN must be/.test(error.message),
      JSON.stringify(token),
    );
  for (const port of ['-1', '65536', 'abc', '94.64'])
    assert.throws(
      () => load({ HERALD_METRICS_PORT: port }),
      (error: Error) => error instanceof ConfigError && error.message.startsWith(`HERALD_METRICS_PORT=${port} must be`),
      port,
    );
});
