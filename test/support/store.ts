import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';
import type { AttemptResult } from '../../src/store/queue/index.js';
import { BASE_ENV } from './child.js';
import { createTestDatabase } from './service.js';
import type { Kysely } from 'kysely';
import { openPostgres, openSqlite } from '../../src/store/db.js';

/**
 * A store of the store under test (SQLite, or a fresh PostgreSQL database) with one organization, one
 * application and one endpoint (at `endpointUrl`, its id in `endpointId`, its signing secret in `secret`); `emit` adds messages with the given payloads. Closed
 * and removed after the test, after what was handed to `closeFirst` (last handed, first closed): a worker
 * or a second store on the same database must end before it.
 */
export async function openStore(
  t: TestContext,
  env: Record<string, string> = {},
  endpointUrl = 'http://127.0.0.1:9/hook',
) {
  const database = await createTestDatabase({ migrated: true });
  const config = loadConfig({ ...BASE_ENV, ...database.env, ...env });
  const store = await Store.open(config);
  const closers: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const close of closers.reverse()) await close();
    await store.close();
    await database.drop();
  });
  const org = await store.organizations.create('store-test', 'unlimited');
  const scope = { orgId: org.id, livemode: false };
  const app = await store.applications.create(scope, { name: 'store-test' });
  const { row: endpoint, secret } = await store.endpoints.create(scope, { appId: app.id, url: endpointUrl });
  const emit = async (count: number, payloadOf: (i: number) => string = (i) => `{"i":${i}}`) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const emitted = await store.messages.emit({
        scope,
        appId: app.id,
        eventType: 'invoice.paid',
        payloadJson: payloadOf(i),
        idempotencyKey: null,
      });
      assert.ok(emitted.ok);
      ids.push(emitted.message.id);
    }
    return ids;
  };
  const closeFirst = (close: () => Promise<void>) => void closers.push(close);
  return { store, emit, scope, appId: app.id, endpointId: endpoint.id, secret, config, closeFirst };
}

/** An attempt's result with `status`, finished at `at`: a 2xx delivered, anything else failed. */
export function outcome(status: number, at = Date.now()): AttemptResult {
  const ok = status >= 200 && status < 300;
  return {
    ok,
    responseStatus: status,
    responseBody: ok ? 'ok' : 'no',
    error: ok ? null : `HTTP ${status}`,
    durationMs: 1,
    retryAfterMs: null,
    at,
  };
}

/** Opens the store a test service's `env` names, on its own connection, for `use`, and closes it. */
export async function withDatabase(
  env: Record<string, string>,
  use: (db: Kysely<any>) => Promise<void>,
): Promise<void> {
  const opened = env.HERALD_DATABASE_URL ? openPostgres(env.HERALD_DATABASE_URL) : openSqlite(env.HERALD_DATA_DIR!);
  try {
    await use(opened.db as Kysely<any>);
  } finally {
    await opened.close();
  }
}
