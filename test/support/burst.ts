import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from './service.js';
import { bootstrap, type Client } from './client.js';
import { Receiver } from './receiver.js';
import { killChild, startChild, type Child } from './child.js';

// What the tests that kill and restart the service share: a store, child processes and a receiver that
// are cleaned up with the test, an organization with one endpoint, a burst of emits, and arrival counts.

export async function database(t: TestContext): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrated: true });
  t.after(() => db.drop());
  return db;
}

export async function child(t: TestContext, env: Record<string, string>): Promise<Child> {
  const started = await startChild(env);
  t.after(() => killChild(started));
  return started;
}

export async function receiver(t: TestContext, respond?: Receiver['respond']): Promise<Receiver> {
  const r = await new Receiver().start();
  if (respond) r.respond = respond;
  t.after(() => r.stop());
  return r;
}

export async function organization(url: string, receiverUrl: string): Promise<{ api: Client; appId: string }> {
  const { test: api } = await bootstrap(url);
  const app = await api.post('/api/v1/applications', { name: 'Crash' });
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiverUrl}/hook` });
  assert.equal(endpoint.status, 201);
  return { api, appId: app.body.id };
}

/** Emits `count` messages, `parallel` at a time; returns the ids the API acknowledged (2xx). */
export async function emitMany(api: Client, appId: string, count: number, parallel: number): Promise<string[]> {
  const accepted: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      try {
        const reply = await api.post('/api/v1/messages', { app_id: appId, event_type: 'invoice.paid', payload: { i } });
        if (reply.status >= 200 && reply.status < 300) accepted.push(reply.body.id);
      } catch {
        // No answer: not acknowledged, so not promised.
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return accepted;
}

/** How many times each message id reached the receiver. */
export function arrivals(r: Receiver): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of r.received) {
    const id = String(request.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}
