import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';
import { BASE_ENV } from '../delivery/child.js';
import { createTestDatabase } from '../support/service.js';

/**
 * A store of the store under test (SQLite, or a fresh PostgreSQL database) with one organization, one
 * application and one endpoint; `emit` adds messages with the given payloads. Closed and removed after the test.
 */
export async function openStore(t: TestContext, env: Record<string, string> = {}) {
  const database = await createTestDatabase();
  const store = await Store.open(loadConfig({ ...BASE_ENV, ...database.env, ...env }));
  t.after(async () => {
    await store.close();
    await database.drop();
  });
  const org = await store.organizations.create('store-test', 'unlimited');
  const scope = { orgId: org.id, livemode: false };
  const app = await store.applications.create(scope, { name: 'store-test' });
  await store.endpoints.create(scope, { appId: app.id, url: 'http://127.0.0.1:9/hook' });
  const emit = async (count: number, payloadOf: (i: number) => string = (i) => `{"i":${i}}`) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const emitted = await store.messages.emit({ scope, appId: app.id, eventType: 'invoice.paid', payloadJson: payloadOf(i), idempotencyKey: null });
      assert.ok(emitted.ok);
      ids.push(emitted.message.id);
    }
    return ids;
  };
  return { store, emit, scope, appId: app.id };
}
