import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import type { Store } from './store/index.js';
import { apiKeyToApi, iso } from './api/serialize.js';

// Each command loads only what it runs: the service (the HTTP API, the worker, their dependencies) is
// imported for `serve`, the store for the commands that open it, so `herald receive` or `herald org list`
// starts without loading the whole service.

const USAGE = `Usage: herald <command>

  serve                                   run the service (HERALD_ROLE decides api, worker or all)
  worker                                  run only the delivery worker (same as HERALD_ROLE=worker serve)
  migrate                                 bring the database schema up to date and exit
  partition                               PostgreSQL: make the history tables partitioned by day, so retention
                                          drops whole days (docs/design/partitions.md); online, nothing copied
  org create [--name N] [--plan P]        create an organization with a Test and a Live key
  org list                                list organizations
  org plan <org_id> <plan>                change an organization's plan (its rate limit)
  keys create <org_id> [--live] [--name N] [--role R]
                                          issue another API key (role admin, writer, reader or emitter)
  keys revoke <org_id> <key_id> [--live]  revoke an API key
  secrets reseal                          seal every stored secret under HERALD_SECRET_KEY (after a master key
                                          change, with the old one in HERALD_SECRET_KEY_PREVIOUS); online, batched
  receive [--port 9000] [--secret S] [--status 200]
                                          a webhook receiver on 127.0.0.1 for trying Herald out: prints each
                                          request and, with the endpoint's whsec_ secret (or whpk_ public key),
                                          whether its signature verifies; answers --status (401 if it does not)

Settings are read from the environment (see README). Output of org/keys commands is JSON.`;

async function withStore<T>(run: (store: Store) => Promise<T>): Promise<T> {
  const { Store } = await import('./store/index.js');
  const store = await Store.open(loadConfig());
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** Endpoints read and written per batch of `secrets reseal`: short transactions while the service runs. */
const RESEAL_BATCH = 200;

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

async function serve(roleOverride?: 'worker') {
  // Settings first: a bad one stops the command before the service is loaded.
  const config = loadConfig(roleOverride ? { ...process.env, HERALD_ROLE: roleOverride } : process.env);
  const { createLogger, logsWritten, startService } = await import('./service.js');
  const logger = createLogger(config);
  const service = await startService(config, logger);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // The last lines (this one, and a failure's) are written before the process exits.
    service.close().then(
      () => logsWritten(logger).then(() => process.exit(0)),
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        return logsWritten(logger).then(() => process.exit(1));
      },
    );
  };
  // Signals are handled before the service says it is ready: a supervisor that stops it on seeing that
  // line must reach this shutdown, not the default exit.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const store = config.databaseUrl ? 'PostgreSQL' : `embedded SQLite in ${config.dataDir}`;
  if (service.url) {
    const hint =
      config.mode === 'development'
        ? `; get keys with: curl -X POST ${service.url}/api/v1/dev/bootstrap`
        : '; issue keys with: npx herald org create';
    console.log(`Herald (${config.role}) listening on ${service.url} with ${store}${hint}`);
    console.log(`Operator console: ${service.url}/console (sign in with an API key)`);
  } else {
    const metrics = service.metricsUrl ? `; metrics at ${service.metricsUrl}/metrics` : '';
    console.log(`Herald worker running with ${store}${metrics}`);
  }
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      role: { type: 'string' },
      live: { type: 'boolean', default: false },
      port: { type: 'string' },
      secret: { type: 'string' },
      status: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command = 'serve', sub, ...rest] = positionals;
  if (values.help) return void console.log(USAGE);
  switch (`${command} ${sub ?? ''}`.trim()) {
    case 'serve':
      return serve();
    case 'worker':
      return serve('worker');
    case 'receive': {
      const { receive, receiveOptions } = await import('./cli/receive.js');
      return receive(receiveOptions(values));
    }
    case 'migrate':
      return withStore(async () => console.log('database schema is up to date'));
    case 'partition':
      return withStore(async (store) =>
        console.log(
          (await store.partitionTables())
            ? 'the history tables are partitioned'
            : 'the history tables were partitioned already',
        ),
      );
    case 'org create': {
      const config = loadConfig();
      const plan = values.plan ?? config.defaultPlan;
      if (!(plan in config.plans))
        throw new ConfigError(`unknown plan ${plan} (have ${Object.keys(config.plans).join(', ')})`);
      const { bootstrapOrganization } = await import('./api/shared/bootstrap.js');
      return withStore(async (store) => print(await bootstrapOrganization(store, values.name ?? 'Organization', plan)));
    }
    case 'org list':
      // Times as the API shows them (ISO 8601), not as stored.
      return withStore(async (store) =>
        print((await store.organizations.list()).map((org) => ({ ...org, created_at: iso(org.created_at) }))),
      );
    case 'org plan': {
      const [orgId, plan] = rest;
      const config = loadConfig();
      if (!orgId || !plan || !(plan in config.plans))
        throw new ConfigError(`usage: org plan <org_id> <${Object.keys(config.plans).join('|')}>`);
      return withStore(async (store) => {
        if (!(await store.organizations.setPlan(orgId, plan, await cliActor())))
          throw new ConfigError(`no organization ${orgId}`);
        print({ id: orgId, plan });
      });
    }
    case 'keys create': {
      const [orgId] = rest;
      if (!orgId) throw new ConfigError('usage: keys create <org_id> [--live] [--name N] [--role R]');
      const { ROLES } = await import('./domain/access.js');
      const role = (values.role ?? 'admin') as (typeof ROLES)[number];
      if (!ROLES.includes(role)) throw new ConfigError(`--role must be one of ${ROLES.join(', ')}`);
      return withStore(async (store) => {
        if (!(await store.organizations.get(orgId))) throw new ConfigError(`no organization ${orgId}`);
        const issued = await store.organizations.issueKey(
          { orgId, livemode: values.live ?? false, actor: await cliActor() },
          values.name ?? '',
          { role, appIds: null, expiresAt: null },
        );
        print({ ...apiKeyToApi(issued.row), key: issued.key });
      });
    }
    case 'keys revoke': {
      const [orgId, keyId] = rest;
      if (!orgId || !keyId) throw new ConfigError('usage: keys revoke <org_id> <key_id> [--live]');
      return withStore(async (store) => {
        const row = await store.organizations.revokeKey(
          { orgId, livemode: values.live ?? false, actor: await cliActor() },
          keyId,
        );
        if (!row) throw new ConfigError(`no key ${keyId} in ${orgId} (${values.live ? 'live' : 'test'})`);
        print(apiKeyToApi(row));
      });
    }
    case 'secrets reseal':
      return withStore(async (store) => {
        let checked = 0;
        let resealed = 0;
        for (let after: string | null = null; ; ) {
          const batch = await store.endpoints.resealBatch(after, RESEAL_BATCH);
          checked += batch.checked;
          resealed += batch.resealed;
          if (batch.last === null) break;
          after = batch.last;
        }
        await store.organizations.recordReseal(await cliActor(), { checked, resealed });
        print({ endpoints_checked: checked, endpoints_resealed: resealed });
      });
    default:
      console.error(USAGE);
      process.exitCode = 2;
  }
}

/** The audit log's actor of a command: the operator's CLI, named by the system user that ran it. */
async function cliActor() {
  const { userInfo } = await import('node:os');
  let user: string | null = null;
  try {
    user = userInfo().username;
  } catch {}
  return { type: 'cli' as const, id: user, requestId: null };
}

/** `text` with the password of any URL in it masked (a database URL may come back inside an error). */
function withoutPasswords(text: string): string {
  return text.replace(/(\/\/[^:/@\s]+:)[^@\s]+@/g, '$1<redacted>@');
}

main(process.argv.slice(2)).catch((error) => {
  // Bad configuration stops start-up with one clear line; at HERALD_LOG_LEVEL=debug or trace the
  // underlying error follows with its stack (a migration that failed, say), for whoever debugs it.
  if (error instanceof ConfigError) {
    console.error(`herald: ${error.message}`);
    if (error.cause instanceof Error && ['debug', 'trace'].includes(process.env.HERALD_LOG_LEVEL ?? ''))
      console.error(withoutPasswords(error.cause.stack ?? String(error.cause)));
  } else {
    console.error(error);
  }
  process.exit(1);
});
