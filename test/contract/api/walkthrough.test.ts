import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';
import { promisify } from 'node:util';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';

const run = promisify(execFile);

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

// The README's walkthrough run command by command, as pasted: the service (`npm start`) and the receiver
// (`npx herald receive`) as processes of their own, each `curl` through a shell, each `…` id filled in from
// the answer the README names. The emitted message must reach the receiver signed, and the receiver, given
// the endpoint's secret, must say the signature verifies.
test('the README walkthrough, pasted command by command, delivers a signed webhook that verifies', async (t) => {
  const database = await createTestDatabase();
  const receiverPort = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: '0',
    HERALD_LOG_LEVEL: 'warn',
    ...database.env,
  };
  const started: Started[] = [];
  t.after(async () => {
    for (const process of started) await process.stop();
    await database.drop();
  });

  let baseUrl = '';
  let receiver: Started | undefined;
  const filled = new Map<string, string>();
  const answers: { command: string; body: any }[] = [];
  const fill = (command: string) => {
    let text = command
      .replaceAll('http://127.0.0.1:8080', baseUrl)
      .replaceAll('127.0.0.1:9000', `127.0.0.1:${receiverPort}`)
      .replaceAll('--port 9000', `--port ${receiverPort}`);
    for (const [placeholder, value] of filled) text = text.replaceAll(placeholder, value);
    assert.ok(!/\w_\.\.\./.test(text), `no answer so far gives the id this command needs: ${command}`);
    return text;
  };

  const commands = walkthroughCommands();
  assert.ok(
    commands.some((command) => command.startsWith('npx herald receive')),
    'the walkthrough starts a receiver',
  );
  for (const command of commands) {
    if (command === 'npm ci && npm start') {
      // The checkout is installed already; the service is started as the README says.
      const service = new Started('npm start', env);
      started.push(service);
      baseUrl = (await service.waitFor(/listening on (http:\/\/\S+) /))[1]!;
      assert.match((await service.waitFor(/Operator console: (\S+)/))[1]!, /\/console$/);
    } else if (command.startsWith('npx herald receive')) {
      await receiver?.stop();
      receiver = new Started(fill(command), env);
      started.push(receiver);
      await receiver.waitFor(new RegExp(`Receiving webhooks at http://127\\.0\\.0\\.1:${receiverPort}/`));
    } else if (command.startsWith('export ')) {
      const [, name, value] = /^export (\w+)=(\S+)$/.exec(command)!;
      env[name!] = fill(value!);
    } else {
      assert.match(command, /^curl /, `a walkthrough command this test knows: ${command}`);
      const { stdout } = await run('sh', ['-c', fill(command)], { cwd: ROOT, env });
      const body = JSON.parse(stdout);
      assert.ok(!('error' in body), `${command} answered ${stdout}`);
      answers.push({ command, body });
      // The ids the README says each answer gives.
      if (body.test_key) filled.set('sk_test_...', body.test_key.key);
      if (body.object === 'application') filled.set('app_...', body.id);
      if (body.signing_secret) filled.set('whsec_...', body.signing_secret);
      if (body.delivery_ids) {
        filled.set('dlv_...', body.delivery_ids[0]);
        filled.set('evt_...', body.id);
      }
    }
  }

  const emitted = answers.find((answer) => answer.body.delivery_ids)!.body;
  assert.equal(emitted.delivery_ids.length, 1);
  assert.ok(receiver, 'the walkthrough started a receiver');
  await receiver.waitFor(new RegExp(`webhook-id ${emitted.id} event invoice\\.paid\\nsignature verified`));
  assert.match(receiver.output, /"invoice_id": "inv_1"/);
  assert.ok(!/NOT verified/.test(receiver.output), receiver.output);
  // What the walkthrough's payload read answered is what was emitted.
  const payload = answers.find((answer) => answer.body.object === 'message_payload');
  assert.deepEqual(payload?.body.payload, { invoice_id: 'inv_1', amount: 4200 });
  // The receiver's 200 is recorded: the delivery succeeded.
  const api = new Client(baseUrl, env.KEY);
  const delivered = await eventually(async () => {
    const delivery = await api.get(`/api/v1/deliveries/${emitted.delivery_ids[0]}`);
    return delivery.body.status === 'success' ? delivery.body : null;
  });
  assert.equal(delivered.attempts[0].response_status, 200);
});
