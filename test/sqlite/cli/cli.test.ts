import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, startTestService, type TestDatabase, type TestService } from '../../support/service.js';
import { Client } from '../../support/client.js';
import { REPO_ROOT, SERVICE_COMMAND } from '../../support/paths.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { startService } from '../../../src/service.js';
import pino from 'pino';
import { Webhook as StandardWebhook } from 'standardwebhooks';

const SECRET = 'cli-test-secret-key-0123456789-abcdefghijkl';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real command line in its own process, as an operator would. */
function herald(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...SERVICE_COMMAND, ...args], {
      cwd: REPO_ROOT,
      // Only what the command needs: no settings leak in from the test runner's environment.
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HERALD_LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// The operator CLI: org create and keys create print JSON with working keys; bad settings stop it with one line.
describe('command line', () => {
  let database: TestDatabase;
  let service: TestService;
  let env: Record<string, string>;

  before(async () => {
    database = await createTestDatabase();
    env = { ...database.env, HERALD_MODE: 'production', HERALD_SECRET_KEY: SECRET };
    service = await startTestService(
      { HERALD_ROLE: 'api', HERALD_MODE: 'production', HERALD_SECRET_KEY: SECRET },
      database,
    );
  });
  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  test('org create prints JSON with a working Test and Live key; keys create --live issues another', async () => {
    const created = await herald(['org', 'create', '--name', 'CLI Org'], env);
    assert.equal(created.code, 0, created.stderr);
    const org = JSON.parse(created.stdout);
    assert.match(org.organization.id, /^org_/);
    assert.equal(org.organization.name, 'CLI Org');
    assert.ok(org.test_key.key.startsWith('sk_test_'));
    assert.ok(org.live_key.key.startsWith('sk_live_'));

    const testClient = new Client(service.url, org.test_key.key);
    const liveClient = new Client(service.url, org.live_key.key);
    const app = await testClient.post('/api/v1/applications', { name: 'From CLI key' });
    assert.equal(app.status, 201);
    assert.equal(
      (await liveClient.get(`/api/v1/applications/${app.body.id}`)).status,
      404,
      'the live key acts on Live',
    );
    assert.equal((await liveClient.get('/api/v1/applications')).status, 200);

    // In parallel: each process spends most of its time starting up.
    const [issued, unknown, orgs, reader, badRole] = await Promise.all([
      herald(['keys', 'create', org.organization.id, '--live', '--name', 'deploy'], env),
      herald(['keys', 'create', 'org_doesnotexist'], env),
      herald(['org', 'list'], env),
      herald(['keys', 'create', org.organization.id, '--role', 'reader'], env),
      herald(['keys', 'create', org.organization.id, '--role', 'owner'], env),
    ]);
    assert.equal(reader.code, 0, reader.stderr);
    const readerKey = JSON.parse(reader.stdout);
    assert.equal(readerKey.role, 'reader');
    const readerClient = new Client(service.url, readerKey.key);
    assert.equal((await readerClient.get('/api/v1/applications')).status, 200);
    assert.equal((await readerClient.post('/api/v1/applications', { name: 'no' })).status, 403, 'a reader only reads');
    // Keys the CLI makes are in the audit log, by the CLI.
    const made = (await testClient.get(`/api/v1/audit-log?resource_id=${readerKey.id}`)).body.data;
    assert.deepEqual(
      made.map((entry: any) => [entry.action, entry.actor.type]),
      [['api_key.created', 'cli']],
    );
    assert.notEqual(badRole.code, 0);
    assert.match(badRole.stderr, /--role must be one of admin, writer, reader, emitter/);
    const listedOrg = JSON.parse(orgs.stdout).find((o: any) => o.id === org.organization.id);
    assert.equal(listedOrg.name, 'CLI Org');
    assert.match(
      listedOrg.created_at,
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
      'org list shows times as the API does',
    );
    assert.equal(issued.code, 0, issued.stderr);
    const key = JSON.parse(issued.stdout);
    assert.match(key.id, /^key_/);
    assert.equal(key.livemode, true);
    assert.equal(key.name, 'deploy');
    assert.ok(key.key.startsWith('sk_live_'));
    const listed = await new Client(service.url, key.key).get('/api/v1/api-keys');
    assert.equal(listed.status, 200);
    assert.ok(
      listed.body.data.some((k: any) => k.id === org.live_key.id),
      'the new key belongs to the same organization and environment',
    );

    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /org_doesnotexist/);
  });

  test('bad configuration exits non-zero with one clear line naming the variable', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ HERALD_RETRY_SCHEDULE: 'abc' }, /HERALD_RETRY_SCHEDULE/],
      [{ HERALD_SECRET_KEY: '' }, /HERALD_SECRET_KEY/],
    ];
    // In parallel: each process spends most of its time starting up.
    const runs = await Promise.all(
      cases.map(([override]) => herald(['org', 'create', '--name', 'Never'], { ...env, ...override })),
    );
    for (const [i, [override, variable]] of cases.entries()) {
      const run = runs[i]!;
      assert.notEqual(run.code, 0, `${JSON.stringify(override)} must fail`);
      const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
      assert.equal(lines.length, 1, `one line on stderr, got: ${run.stderr}`);
      assert.match(lines[0]!, variable);
      assert.equal(run.stdout.trim(), '');
    }
    // Nothing was created by the refused runs.
    const names = (await service.store.organizations.list()).map((o) => o.name);
    assert.ok(!names.includes('Never'));
  });

  test('a service that cannot listen stops what it started before it fails: its worker sends nothing afterwards', async (t) => {
    const receiver = await new Receiver().start();
    t.after(() => receiver.stop());
    const store = service.store;
    const org = await store.organizations.create('listen-fails', 'unlimited');
    const scope = { orgId: org.id, livemode: false };
    const app = await store.applications.create(scope, { name: 'listen-fails' });
    await store.endpoints.create(scope, { appId: app.id, url: `${receiver.url}/hook` });
    const config = loadConfig({ ...env, HERALD_ROLE: 'all', PORT: new URL(service.url).port });
    await assert.rejects(
      startService(config, pino({ level: 'silent' })),
      (error: unknown) => error instanceof ConfigError && /the port is in use/.test(error.message),
    );
    // A worker left running would claim this within its idle poll (500 ms).
    const emitted = await store.messages.emit({
      scope,
      appId: app.id,
      eventType: 'invoice.paid',
      payloadJson: '{}',
      idempotencyKey: null,
    });
    assert.ok(emitted.ok);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(receiver.received.length, 0);
  });

  test('serve stops with one clear line on a bad setting, an address it cannot listen on or a store it cannot open', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const aFile = join(dir, 'not-a-dir');
    writeFileSync(aFile, '');
    // A data directory whose database file is a directory: SQLite cannot open it.
    const storeIsADir = join(dir, 'store-is-a-dir');
    mkdirSync(join(storeIsADir, 'herald.db'), { recursive: true });
    const takenPort = new URL(service.url).port;
    const embedded = { HERALD_SECRET_KEY: SECRET, HERALD_ROLE: 'api', PORT: '0' };
    const cases: [Record<string, string>, RegExp][] = [
      [{ ...embedded, HERALD_DATA_DIR: aFile }, /HERALD_DATA_DIR=.*not-a-dir cannot be used as a directory/],
      [{ ...embedded, HERALD_DATA_DIR: join(aFile, 'below') }, /HERALD_DATA_DIR=.*cannot be used as a directory/],
      [{ ...env, HERALD_ROLE: 'api', HERALD_LOG_LEVEL: 'bogus' }, /HERALD_LOG_LEVEL=bogus must be one of/],
      [
        { ...env, HERALD_ROLE: 'api', HERALD_SSRF_ALLOW: '10.0.0.0/8,10.0.0.0/99' },
        /HERALD_SSRF_ALLOW entry 10\.0\.0\.0\/99 is not/,
      ],
      [
        { ...env, HERALD_ROLE: 'api', PORT: takenPort },
        new RegExp(`cannot listen on 127\\.0\\.0\\.1:${takenPort} .*the port is in use`),
      ],
      [
        { ...env, HERALD_ROLE: 'api', HOST: '192.0.2.1', PORT: '0', HERALD_DEV_ALLOW_REMOTE: '1' },
        /cannot listen on 192\.0\.2\.1:0 \(HOST, PORT\)/,
      ],
      [
        { ...embedded, HERALD_DATA_DIR: join(dir, 'remote'), HOST: '0.0.0.0' },
        /HOST=0\.0\.0\.0 is not a loopback address: development mode listens on loopback only .*HERALD_DEV_ALLOW_REMOTE=1/,
      ],
      [{ ...env, HERALD_PLANS: 'starter:3,unlimited:2' }, /HERALD_PLANS=.*unlimited is built in/],
      [
        { ...env, HERALD_REDIS_URL: 'notaurl' },
        /HERALD_REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL or a Unix socket path/,
      ],
      [
        { ...embedded, HERALD_DATA_DIR: storeIsADir },
        /cannot open or migrate the embedded store in .*store-is-a-dir \(HERALD_DATA_DIR\): .+/,
      ],
      // A server that refuses the connection; the password in the URL is never printed.
      [
        { ...embedded, HERALD_DATABASE_URL: 'postgres://herald:pw-never-shown@127.0.0.1:1/herald' },
        /^herald: cannot open or migrate the database \(HERALD_DATABASE_URL\): .*ECONNREFUSED(?!.*pw-never-shown)/,
      ],
    ];
    const runs = await Promise.all(cases.map(([override]) => herald(['serve'], { ...override })));
    for (const [i, [override, expected]] of cases.entries()) {
      const run = runs[i]!;
      assert.equal(run.code, 1, `${JSON.stringify(override)} must fail: ${run.stderr}`);
      const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
      assert.equal(lines.length, 1, `one line on stderr, got: ${run.stderr}`);
      assert.match(lines[0]!, /^herald: /);
      assert.match(lines[0]!, expected);
    }
  });

  test('at HERALD_LOG_LEVEL=debug a store that cannot be opened is followed by the underlying error and its stack, with no password', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const storeIsADir = join(dir, 'store-is-a-dir');
    mkdirSync(join(storeIsADir, 'herald.db'), { recursive: true });
    const debug = { HERALD_SECRET_KEY: SECRET, HERALD_ROLE: 'api', PORT: '0', HERALD_LOG_LEVEL: 'debug' };
    const [sqlite, postgres] = await Promise.all([
      herald(['serve'], { ...debug, HERALD_DATA_DIR: storeIsADir }),
      herald(['serve'], { ...debug, HERALD_DATABASE_URL: 'postgres://herald:pw-never-shown@127.0.0.1:1/herald' }),
    ]);
    for (const run of [sqlite, postgres]) {
      assert.equal(run.code, 1, run.stderr);
      const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
      assert.match(lines[0]!, /^herald: cannot open or migrate /);
      assert.ok(lines.length > 2, `the underlying error follows: ${run.stderr}`);
      assert.ok(
        lines.slice(1).some((line) => /^\s+at /.test(line)),
        `with its stack: ${run.stderr}`,
      );
      assert.doesNotMatch(run.stderr, /pw-never-shown/);
    }
  });
});

// `herald receive`: the walkthrough's receiver. It prints each request and, given the endpoint's secret,
// whether its signature verifies (signed here by the standardwebhooks library, not by Herald's code).
test('receive prints each request, says whether its signature verifies, and answers --status or 401', {
  timeout: 120_000,
}, async (t) => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const refused = await herald(['receive', '--secret', 'whsec_tooshort'], {});
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^herald: --secret: .*\n$/);

  const child = spawn(
    process.execPath,
    [...SERVICE_COMMAND, 'receive', '--port', '0', '--secret', secret, '--status', '202'],
    { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.on('close', resolve));
  t.after(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  const url = (
    await eventually(async () => /Receiving webhooks at (http:\/\/127\.0\.0\.1:\d+)\//.exec(output), 60_000)
  )[1]!;

  const send = (id: string, timestamp: Date, body: string, signWith = secret) => {
    const signature = new StandardWebhook(signWith).sign(id, timestamp, body);
    return fetch(`${url}/hooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
    });
  };
  const body = JSON.stringify({ type: 'invoice.paid', timestamp: new Date().toISOString(), data: { amount: 4200 } });
  assert.equal((await send('evt_good', new Date(), body)).status, 202);
  const other = 'whsec_c29tZXRoaW5nIGVsc2UgZW50aXJlbHkhIQ==';
  assert.equal((await send('evt_badsig', new Date(), body, other)).status, 401);
  assert.equal((await send('evt_stale', new Date(Date.now() - 3_600_000), body)).status, 401);

  await eventually(async () => output.includes('webhook-id evt_stale'));
  assert.match(
    output,
    /POST \/hooks webhook-id evt_good event invoice\.paid\nsignature verified; answered 202\n\{\n {2}"type": "invoice\.paid"/,
  );
  assert.match(output, /webhook-id evt_badsig event invoice\.paid\nsignature NOT verified: no signature matches/);
  assert.match(output, /webhook-id evt_stale event invoice\.paid\nsignature NOT verified: webhook-timestamp/);
  assert.match(output, / {4}"amount": 4200/);

  // --status 500: every webhook fails, and the body says so (Herald keeps it with the attempt).
  const failing = spawn(process.execPath, [...SERVICE_COMMAND, 'receive', '--port', '0', '--status', '500'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let failingOutput = '';
  failing.stdout.on('data', (chunk) => (failingOutput += chunk));
  const failingExited = new Promise((resolve) => failing.on('close', resolve));
  t.after(async () => {
    failing.kill('SIGTERM');
    await failingExited;
  });
  const failingUrl = (
    await eventually(async () => /Receiving webhooks at (http:\/\/127\.0\.0\.1:\d+)\//.exec(failingOutput), 60_000)
  )[1]!;
  const answered = await fetch(`${failingUrl}/hooks`, { method: 'POST', body });
  assert.equal(answered.status, 500);
  assert.equal(await answered.text(), 'failed on purpose: herald receive answers 500 (--status 500)');
});
