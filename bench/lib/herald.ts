import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool, request } from 'undici';
import { benchFile, freePort, REPO, spawnNode, type Child } from './procs.js';
import { sleep } from './stats.js';

// Starting Herald as a child process (so its peak RSS can be read) and talking to its API.

export interface HeraldOptions {
  name: string;
  role: 'api' | 'worker' | 'all';
  dataDir: string;
  logDir: string;
  databaseUrl?: string;
  env?: Record<string, string>;
  /** Write a V8 CPU profile of this process into this directory when it exits. */
  profileDir?: string;
  /** Time every SQLite statement and write the totals into this directory when the process exits. */
  sqlStatsDir?: string;
}

export interface Herald {
  child: Child;
  url: string | null;
  stop(): Promise<void>;
}

const SECRET = 'bench-secret-key-that-is-long-enough-0123456789';
/**
 * The service the bench starts: this checkout's build (dist/main.js), or another checkout's to compare
 * (BENCH_SERVICE_ROOT): its dist/main.js when it has one, else its src/main.ts through that checkout's tsx.
 */
const SERVICE_ROOT = process.env.BENCH_SERVICE_ROOT ?? REPO;
const BUILT_SERVICE = existsSync(join(SERVICE_ROOT, 'dist', 'main.js'));
const SERVICE_SCRIPT = BUILT_SERVICE ? join(SERVICE_ROOT, 'dist', 'main.js') : join(SERVICE_ROOT, 'src', 'main.ts');

export async function startHerald(options: HeraldOptions): Promise<Herald> {
  const port = options.role === 'worker' ? 0 : await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    HERALD_DATA_DIR: options.dataDir,
    HERALD_SECRET_KEY: SECRET,
    HERALD_ROLE: options.role,
    HERALD_DEFAULT_PLAN: 'unlimited',
    HERALD_DATABASE_URL: options.databaseUrl ?? '',
    ...options.env,
  };
  // One directory per process: the main thread's profile and the module-loader thread's land side by side.
  const nodeFlags = options.profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(options.profileDir, options.name)] : [];
  if (!BUILT_SERVICE) nodeFlags.unshift('--import', 'tsx');
  // Experiments with V8 or Node settings (docs/benchmarks.md, "How to run"), without touching the service's start command.
  if (process.env.BENCH_HERALD_NODE_FLAGS)
    nodeFlags.push(...process.env.BENCH_HERALD_NODE_FLAGS.split(' ').filter(Boolean));
  if (options.sqlStatsDir) {
    nodeFlags.push('--import', benchFile('lib', 'sql-stats.js'));
    env.BENCH_SQL_STATS = join(options.sqlStatsDir, `${options.name}.sql.json`);
  }
  const child = spawnNode({
    name: options.name,
    script: SERVICE_SCRIPT,
    args: ['serve'],
    // An unbuilt checkout's tsx resolves from there.
    cwd: BUILT_SERVICE ? REPO : SERVICE_ROOT,
    env,
    logDir: options.logDir,
    nodeFlags,
  });
  const url = options.role === 'worker' ? null : `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  let exitCode: number | null | undefined;
  void child.exited.then((code) => (exitCode = code));
  for (;;) {
    if (exitCode !== undefined)
      throw new Error(
        `${options.name} exited (${exitCode}) during start; see ${child.logFile}:\n${tail(child.logFile)}`,
      );
    if (Date.now() > deadline) throw new Error(`${options.name} did not start in 30 s; see ${child.logFile}`);
    if (url) {
      const ok = await request(`${url}/healthz`).then(
        async (r) => (await r.body.dump(), r.statusCode === 200),
        () => false,
      );
      if (ok) break;
    } else if (readFileSync(child.logFile, 'utf8').includes('Herald worker running')) {
      break;
    }
    await sleep(50);
  }
  return { child, url, stop: () => child.stop(10_000) };
}

/**
 * `herald partition` on a PostgreSQL database, by the service under test (BENCH_SERVICE_ROOT's when set):
 * its history tables partitioned as an operator makes them (docs/design/partitions.md).
 */
export function partitionDatabase(databaseUrl: string): void {
  execFileSync(process.execPath, [SERVICE_SCRIPT, 'partition'], {
    cwd: BUILT_SERVICE ? REPO : SERVICE_ROOT,
    env: { ...process.env, HERALD_DATABASE_URL: databaseUrl, HERALD_SECRET_KEY: SECRET, HERALD_LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '';
  }
}

/** A minimal JSON client for setup calls. */
export class Api {
  constructor(
    readonly baseUrl: string,
    readonly key = '',
  ) {}

  async post<T = any>(path: string, body: unknown, expect = [200, 201]): Promise<T> {
    const response = await request(this.baseUrl + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(this.key ? { authorization: `Bearer ${this.key}` } : {}) },
      body: JSON.stringify(body),
    });
    const text = await response.body.text();
    if (!expect.includes(response.statusCode))
      throw new Error(`POST ${path}: ${response.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }

  async patch<T = any>(path: string, body: unknown): Promise<T> {
    const response = await request(this.baseUrl + path, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.key}` },
      body: JSON.stringify(body),
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`PATCH ${path}: ${response.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }
}

/**
 * The JSON Schema the ingest scenario puts on `invoice.paid` for its run with a schema: what a team would
 * write for emitBody's payload (required fields, types, a pattern, bounds, an array of objects).
 */
export const INVOICE_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['invoice_id', 'amount', 'currency', 'customer', 'lines'],
  additionalProperties: false,
  properties: {
    invoice_id: { type: 'string', pattern: '^inv_[0-9]+$' },
    amount: { type: 'integer', minimum: 0 },
    currency: { type: 'string', enum: ['usd', 'eur', 'gbp'] },
    customer: { type: 'string', minLength: 1, maxLength: 64 },
    lines: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['sku', 'qty'],
        properties: { sku: { type: 'string' }, qty: { type: 'integer', minimum: 1 } },
      },
    },
  },
};

export interface Setup {
  orgId: string;
  key: string;
  appIds: string[];
  endpointIds: string[];
  secrets: string[];
}

/**
 * Bootstraps an organization and creates `apps` applications, each with `endpointsPerApp` endpoints whose
 * URL comes from `urlOf(appIndex, endpointIndex)`.
 */
export async function setupOrg(
  baseUrl: string,
  apps: number,
  endpointsPerApp: number,
  urlOf: (app: number, endpoint: number) => string,
  /** More fields of each endpoint (a content filter, say). */
  fieldsOf: (app: number, endpoint: number) => Record<string, unknown> = () => ({}),
): Promise<Setup> {
  const boot = await new Api(baseUrl).post('/api/v1/dev/bootstrap', { name: 'Bench' });
  const key = boot.test_key.key as string;
  const api = new Api(baseUrl, key);
  const appIds: string[] = [];
  const endpointIds: string[] = [];
  const secrets: string[] = [];
  for (let a = 0; a < apps; a++) {
    const app = await api.post('/api/v1/applications', { name: `Bench app ${a}` });
    appIds.push(app.id);
    // Endpoints of one app are created a few at a time.
    for (let start = 0; start < endpointsPerApp; start += 16) {
      const batch = [];
      for (let e = start; e < Math.min(endpointsPerApp, start + 16); e++)
        batch.push(api.post('/api/v1/endpoints', { app_id: app.id, url: urlOf(a, e), ...fieldsOf(a, e) }));
      for (const endpoint of await Promise.all(batch)) {
        endpointIds.push(endpoint.id);
        secrets.push(endpoint.signing_secret);
      }
    }
  }
  return { orgId: boot.organization.id as string, key, appIds, endpointIds, secrets };
}

/** Emit number n to the application: an invoice payload, with `more` fields (an emit time, say) at its end. */
export function emitBody(appId: string, n: number, more: Record<string, unknown> = {}): string {
  return JSON.stringify({
    app_id: appId,
    event_type: 'invoice.paid',
    payload: {
      invoice_id: `inv_${n}`,
      amount: 4200,
      currency: 'usd',
      customer: 'cus_8Dj2kL',
      lines: [{ sku: 'pro-monthly', qty: 1 }],
      ...more,
    },
  });
}

export function emitPool(url: string, connections: number): Pool {
  return new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
}
