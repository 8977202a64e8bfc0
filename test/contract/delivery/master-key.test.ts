import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { REPO_ROOT, SERVICE_COMMAND } from '../../support/paths.js';
import { BASE_ENV, killChild, startChild } from '../../support/child.js';
import { child, database, receiver } from '../../support/burst.js';
import { verifies } from '../../support/delivery.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, type Received } from '../../support/receiver.js';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { SecretBox } from '../../../src/domain/secrets.js';

// Rotating the master key online (decisions: "Master key rotation"): the service restarts with a new
// HERALD_SECRET_KEY and the old one in HERALD_SECRET_KEY_PREVIOUS, `herald secrets reseal` seals every
// stored secret under the new key while deliveries go on, and then the old key can be dropped. Every
// request sent along the way carries signatures that verify.

const OLD_KEY = BASE_ENV.HERALD_SECRET_KEY;
const NEW_KEY = 'the-new-master-key-that-is-long-enough-9876543210';

function reseal(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const run = spawn(process.execPath, [...SERVICE_COMMAND, 'secrets', 'reseal'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', ...BASE_ENV, HERALD_LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    run.stdout.on('data', (chunk) => (stdout += chunk));
    run.stderr.on('data', (chunk) => (stderr += chunk));
    run.on('error', reject);
    run.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function verifiesV1a(request: Received, whpk: string): boolean {
  const raw = Buffer.from(whpk.slice(5), 'base64');
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
  const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  const signed = Buffer.from(
    `${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`,
  );
  return String(request.headers['webhook-signature'])
    .split(' ')
    .some((part) => part.startsWith('v1a,') && verify(null, signed, key, Buffer.from(part.slice(4), 'base64')));
}

test('the master key rotates under delivery load: reseal online, drop the old key, every signature verifies', async (t) => {
  const db = await database(t);
  const hooks = await receiver(t);
  let service = await child(t, db.env);
  const { test: api } = await bootstrap(service.url!);
  const app = (await api.post('/api/v1/applications', { name: 'rotate' })).body;
  const made = [
    await api.post('/api/v1/endpoints', { app_id: app.id, url: `${hooks.url}/hmac` }),
    await api.post('/api/v1/endpoints', { app_id: app.id, url: `${hooks.url}/ed`, signature_type: 'ed25519' }),
    await api.post('/api/v1/endpoints', {
      app_id: app.id,
      url: `${hooks.url}/headers`,
      headers: { Authorization: 'Bearer kept-through-rotation' },
    }),
  ];
  const keyOf: Record<string, string> = {
    '/hmac': made[0]!.body.signing_secret,
    '/ed': made[1]!.body.public_key,
    '/headers': made[2]!.body.signing_secret,
  };

  // A steady load of emits through every step; each message goes to the three endpoints.
  let emitting = true;
  let client: Client = api;
  const emitted: string[] = [];
  const load = (async () => {
    while (emitting) {
      const reply = await client
        .post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} })
        .catch(() => null);
      if (reply?.status === 201) emitted.push(reply.body.id);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const restart = async (env: Record<string, string>) => {
    const port = new URL(service.url!).port;
    await killChild(service);
    service = await startChild({ ...db.env, ...env, PORT: port });
    t.after(() => killChild(service));
    client = api;
  };
  await eventually(async () => emitted.length >= 5, 10_000, 'load under way');

  // 1. The new key, with the old one to open what it sealed.
  await restart({ HERALD_SECRET_KEY: NEW_KEY, HERALD_SECRET_KEY_PREVIOUS: OLD_KEY });
  const sent = emitted.length;
  await eventually(async () => emitted.length >= sent + 5, 10_000, 'emits after the restart');
  // 2. Reseal while the service runs.
  const first = await reseal({ ...db.env, HERALD_SECRET_KEY: NEW_KEY, HERALD_SECRET_KEY_PREVIOUS: OLD_KEY });
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(JSON.parse(first.stdout), { endpoints_checked: 3, endpoints_resealed: 3 });
  const again = await reseal({ ...db.env, HERALD_SECRET_KEY: NEW_KEY, HERALD_SECRET_KEY_PREVIOUS: OLD_KEY });
  assert.deepEqual(JSON.parse(again.stdout), { endpoints_checked: 3, endpoints_resealed: 0 }, 'idempotent');
  // 3. The old key dropped.
  await restart({ HERALD_SECRET_KEY: NEW_KEY });
  const after = emitted.length;
  await eventually(async () => emitted.length >= after + 5, 10_000, 'emits with the new key alone');
  emitting = false;
  await load;

  await eventually(
    async () => new Set(hooks.received.map((r) => `${r.path}|${r.headers['webhook-id']}`)).size >= emitted.length * 3,
    30_000,
    'every message at every endpoint',
  );
  for (const request of hooks.received) {
    const path = request.path;
    const ok = path === '/ed' ? verifiesV1a(request, keyOf[path]!) : verifies(request, keyOf[path]!);
    assert.ok(ok, `a request to ${path} carries a signature that verifies`);
    if (path === '/headers') assert.equal(request.headers.authorization, 'Bearer kept-through-rotation');
  }

  // Everything stored opens with the new key alone.
  const store = await Store.open(loadConfig({ ...BASE_ENV, ...db.env, HERALD_SECRET_KEY: NEW_KEY }));
  t.after(() => store.close());
  // Each reseal is in the audit log of both environments of every organization, by the CLI.
  const reseals = await store.ctx.db
    .selectFrom('audit_log')
    .selectAll()
    .where('action', '=', 'master_key.resealed')
    .orderBy('id')
    .execute();
  assert.deepEqual(
    reseals.map((entry) => [entry.livemode, entry.actor_type, JSON.parse(entry.changes).endpoints_resealed[1]]),
    [
      [0, 'cli', 3],
      [1, 'cli', 3],
      [0, 'cli', 0],
      [1, 'cli', 0],
    ],
  );
  const box = new SecretBox(NEW_KEY);
  const rows = await store.ctx.db.selectFrom('endpoints').selectAll().execute();
  for (const row of rows)
    for (const sealed of [
      row.secret_sealed,
      row.previous_secret_sealed,
      row.earlier_secrets_sealed,
      row.headers_sealed,
    ])
      if (sealed !== null) assert.ok(box.sealedWithCurrentKey(sealed));
});
