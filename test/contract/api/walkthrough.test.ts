import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';

// The README's walkthrough, as a newcomer would do it: bootstrap, application, endpoint, emit, read back.
test('bootstrap → application → endpoint → emit → delivered and readable', async (t) => {
  const service = await startTestService();
  const receiver = await new Receiver().start();
  t.after(async () => {
    await service.stop();
    await receiver.stop();
  });
  const { test: api } = await bootstrap(service.url);

  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  assert.equal(app.status, 201);
  assert.match(app.body.id, /^app_/);
  assert.match(app.body.portal_path, /^\/portal\/.{40,}/);

  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  assert.equal(endpoint.status, 201);
  assert.match(endpoint.body.signing_secret, /^whsec_/);
  assert.equal(endpoint.body.status, 'active');

  const emitted = await api.post('/api/v1/messages', {
    app_id: app.body.id,
    event_type: 'invoice.paid',
    payload: { amount: 42 },
  });
  assert.equal(emitted.status, 201);
  assert.match(emitted.body.id, /^evt_/);
  assert.equal(emitted.body.idempotent, false);
  assert.equal(emitted.body.delivery_ids.length, 1);

  await receiver.waitFor(1);
  assert.deepEqual(JSON.parse(receiver.received[0]!.body).data, { amount: 42 });

  const message = await api.get(`/api/v1/messages/${emitted.body.id}`);
  assert.equal(message.status, 200);
  assert.deepEqual(Object.keys(message.body).sort(), [
    'app_id',
    'channels',
    'created_at',
    'deliver_at',
    'event_type',
    'id',
    'object',
    'tags',
    'trace_id',
  ]);

  const delivery = await api.get(`/api/v1/deliveries/${emitted.body.delivery_ids[0]}`);
  assert.equal(delivery.status, 200);
  assert.equal(delivery.body.object, 'delivery');
  assert.equal(delivery.body.message_id, emitted.body.id);
});

const ROOT = REPO_ROOT;

/** The commands of the README's walkthrough: continuation lines joined, comments and blank lines left out. */
function walkthroughCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Five-minute walkthrough'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the walkthrough has a sh block');
  return block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** A process the walkthrough starts (the service, the receiver), in its own process group, with its output. */
class Started {
  output = '';
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  constructor(command: string, env: Record<string, string>) {
    this.child = spawn('sh', ['-c', command], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (chunk) => (this.output += chunk));
    this.child.stderr!.on('data', (chunk) => (this.output += chunk));
    this.exited = new Promise((resolve) => this.child.on('close', () => resolve()));
  }

  /** Resolves with the first match of `pattern` in the output. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
    return eventually(async () => pattern.exec(this.output), timeoutMs, `${pattern} in the output:\n${this.output}`);
  }

  /** Ctrl-C, as a person at the shell would: SIGINT to the process group it started. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(-this.child.pid!, 'SIGINT');
    const killed = setTimeout(() => process.kill(-this.child.pid!, 'SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(killed);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// The README's walkthrough as pasted: the service (`npm start`) as a process of its own, and the second
// shell's commands as one shell session (its variables and its background receiver live on between
// commands). The emitted message must reach the receiver signed, the receiver, given the endpoint's secret
// captured from its answer, must say the signature verifies, and the delivery must be recorded a success.
test('the README walkthrough, pasted as it stands, delivers a signed webhook that verifies', async (t) => {
  const database = await createTestDatabase();
  const receiverPort = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: '0',
    HERALD_LOG_LEVEL: 'warn',
    // The session emits right after starting the receiver in the background, faster than a person pastes:
    // on a busy machine the first attempt may find it not yet listening, and the retry comes a second later
    // rather than after the default schedule's 5 s and 5 min.
    HERALD_RETRY_SCHEDULE: '0s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s',
    ...database.env,
  };
  const started: Started[] = [];
  t.after(async () => {
    for (const process of started) await process.stop();
    await database.drop();
  });

  const [first, ...session] = walkthroughCommands();
  assert.equal(first, 'npm start', 'the walkthrough starts the service first');
  assert.ok(!session.some((command) => /\w_\.\.\./.test(command)), 'no id is left for the reader to paste');
  assert.ok(
    session.some((command) => command.startsWith('npx herald receive')),
    'the walkthrough starts a receiver',
  );
  const service = new Started('npm start', env);
  started.push(service);
  const baseUrl = (await service.waitFor(/listening on (http:\/\/\S+) /))[1]!;
  assert.match((await service.waitFor(/Operator console: (\S+)/))[1]!, /\/console$/);

  const script = [
    ...session.map((command) =>
      command
        .replaceAll('http://127.0.0.1:8080', baseUrl)
        .replaceAll('127.0.0.1:9000', `127.0.0.1:${receiverPort}`)
        .replaceAll('--port 9000', `--port ${receiverPort}`),
    ),
    'echo "WALKTHROUGH KEY=$KEY MESSAGE=$MESSAGE"',
  ].join('\n');
  const shell = new Started(script, env);
  started.push(shell);
  const [, key, messageId] = await shell.waitFor(/WALKTHROUGH KEY=(sk_test_\w+) MESSAGE=(evt_\w+)/);
  await shell.waitFor(new RegExp(`webhook-id ${messageId} event invoice\\.paid\\nsignature verified`));
  assert.match(shell.output, /"invoice_id": "inv_1"/, 'the receiver printed the payload');
  assert.ok(!/NOT verified/.test(shell.output), shell.output);
  assert.ok(!/"error"/.test(shell.output), `no command was refused:\n${shell.output}`);
  // What the walkthrough's payload read answered is what was emitted.
  assert.match(shell.output, /"object":"message_payload"[^\n]*"payload":\{"invoice_id":"inv_1","amount":4200\}/);
  // The receiver's 200 is recorded: the delivery succeeded, to the application named by its uid.
  const api = new Client(baseUrl, key);
  const delivered = await eventually(async () => {
    const page = await api.get(`/api/v1/deliveries?message_id=${messageId}`);
    return page.body.data[0]?.status === 'success' ? page.body.data[0] : null;
  });
  assert.equal((await api.get(`/api/v1/deliveries/${delivered.id}`)).body.attempts[0].response_status, 200);
  const message = await api.get(`/api/v1/messages/${messageId}`);
  assert.equal(message.body.app_id, (await api.get('/api/v1/applications/acme')).body.id);
});
