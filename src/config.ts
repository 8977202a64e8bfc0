import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { isAllowListEntry, isLoopbackHost } from './domain/addresses.js';
import { parseDuration } from './domain/duration.js';

// Every setting is read here, once, and validated before anything starts.
// A bad value stops start-up with one line naming the variable and what it accepts.

export type Role = 'api' | 'worker' | 'all';
export type Mode = 'development' | 'production';
/** What Test endpoints (made through the API) may reach: loopback and private networks too, or public addresses only. */
export type TestNetwork = 'private' | 'public';

export interface PlanLimits {
  /** Requests per second allowed to one organization; null means no limit. */
  [plan: string]: number | null;
}

import type { CircuitDefaults } from './domain/circuit.js';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  mode: Mode;
  secretKey: string;
  role: Role;
  retryScheduleMs: number[];
  /** HERALD_CIRCUIT_*: the circuit breaker's service-wide settings (an endpoint's `circuit` overrides them). */
  circuit: CircuitDefaults;
  /** HERALD_MAX_DELIVER_AHEAD: how far ahead a message's deliver_at may lie. */
  maxDeliverAheadMs: number;
  attemptTimeoutMs: number;
  secretGraceMs: number;
  disableAfterMs: number;
  idempotencyTtlMs: number;
  maxPayloadBytes: number;
  retentionMs: number;
  /** How long audit log entries are kept (HERALD_AUDIT_RETENTION). */
  auditRetentionMs: number;
  /** PostgreSQL: the time range of each partition of the history tables (HERALD_PARTITION_INTERVAL). */
  partitionIntervalMs: number;
  /** PostgreSQL: how many partitions are kept made ahead of the current one (HERALD_PARTITIONS_AHEAD). */
  partitionsAhead: number;
  leaseMs: number;
  concurrency: number;
  endpointConcurrency: number;
  plans: PlanLimits;
  defaultPlan: string;
  redisUrl: string | null;
  /** Prefix of the rate-limit counter keys in Redis, so several deployments (or test runs) can share one Redis. */
  redisPrefix: string;
  /** Most PostgreSQL connections this process opens (plus one for LISTEN in worker processes). */
  dbPoolSize: number;
  /** Hosts or CIDR ranges Live endpoints may reach even though they are not public. */
  ssrfAllow: string[];
  logLevel: string;
  /**
   * Spans are exported over OTLP/HTTP (src/tracing/): the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none
   * turns it off. The exporter reads the other OTEL_* variables itself.
   */
  tracing: boolean;
  /** Largest response body kept per attempt, in bytes. */
  responseBodyLimit: number;
  /** How long a request (its headers and whole body) may take to arrive; a stalled upload is cut with 408. */
  requestTimeoutMs: number;
  /** Most endpoints one application may have (its emits fan out to each). */
  maxEndpointsPerApp: number;
  /** Most event types one environment's catalog may have (HERALD_MAX_EVENT_TYPES). */
  maxEventTypes: number;
  /** Most bytes of compiled event-schema validators an API process keeps (HERALD_SCHEMA_CACHE_MB). */
  schemaCacheBytes: number;
  /** How long one event schema may take to check and compile on the compile thread (HERALD_SCHEMA_COMPILE_DEADLINE). */
  schemaCompileDeadlineMs: number;
  /** Steps one message's content-filter evaluations may take together, and one filter test (HERALD_FILTER_BUDGET). */
  filterBudget: number;
  /** Earlier master keys, used only to open what they sealed (HERALD_SECRET_KEY_PREVIOUS). */
  previousSecretKeys: string[];
  /**
   * HERALD_TEST_NETWORK: `private` lets Test endpoints reach loopback and private networks (a developer's
   * receiver); `public` holds them to public addresses as Live ones are (http stays allowed).
   */
  testNetwork: TestNetwork;
  /** Failed authentications one client address may make per second; past it, 429 without a key lookup. */
  authFailureLimit: number;
  /** HERALD_METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>`; null: open. */
  metricsToken: string | null;
  /** HERALD_METRICS_PORT: where a `worker` process serves /metrics (0: any free port); null: not served. */
  metricsPort: number | null;
  /**
   * HERALD_KAFKA_IDEMPOTENT: Kafka destinations publish with an idempotent producer (true, the default); false
   * for clusters that do not grant it (IDEMPOTENT_WRITE) or cannot answer its producer id.
   */
  kafkaIdempotent: boolean;
  /** HERALD_TRANSFORMATION_TIMEOUT: CPU time one run of an endpoint's transformation may take. */
  transformationTimeoutMs: number;
  /** HERALD_TRANSFORMATION_MEMORY: the heap one endpoint's transformation may grow to, in bytes. */
  transformationMemoryBytes: number;
  /** HERALD_TRANSFORMATION_THREADS: threads a process runs transformations on (started on first use). */
  transformationThreads: number;
  /** HERALD_OUTBOUND_PROXY: the forward proxy every delivery leaves through (http://[user:pass@]host:port); null: direct. */
  outboundProxy: string | null;
  /** HERALD_NO_PROXY: receivers reached directly although a proxy is set (hosts, domain suffixes, addresses, CIDRs). */
  noProxy: string[];
  /**
   * HERALD_TRUST_PROXY: whose X-Forwarded-For is believed for the client's address: false (the socket's
   * peer is the client), a number of proxy hops, or the addresses and CIDR ranges of trusted proxies.
   */
  trustProxy: false | number | string[];
  /**
   * HERALD_PUBLIC_URL: the address customers open Herald at (an http(s) URL, perhaps with a path, no query),
   * without a trailing slash; portal links are built under it. Null: from the request's Host, when valid.
   */
  publicUrl: string | null;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value === '' ? fallback : value;
}

function duration(env: Env, name: string, fallback: string): number {
  const text = read(env, name, fallback);
  const ms = parseDuration(text);
  if (ms === null) throw new ConfigError(`${name}=${text} is not a duration (use ms, s, m, h or d, e.g. 15s)`);
  return ms;
}

function integer(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const text = read(env, name, String(fallback));
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new ConfigError(`${name}=${text} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const text = read(env, name, fallback);
  if (!(allowed as readonly string[]).includes(text))
    throw new ConfigError(`${name}=${text} must be one of ${allowed.join(', ')}`);
  return text as T;
}

/** A size such as `8MB`, `512KB` or a number of bytes, from `min` to `max`. */
function byteSize(env: Env, name: string, fallback: string, min: number, max: number): number {
  const text = read(env, name, fallback);
  const match = /^(\d+)\s*(B|KB|MB|GB)?$/i.exec(text);
  const unit = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[(match?.[2] ?? 'B').toUpperCase() as 'B'];
  const bytes = match ? Number(match[1]) * unit : Number.NaN;
  if (!(bytes >= min && bytes <= max))
    throw new ConfigError(
      `${name}=${text} must be a size from ${min / 1024 / 1024}MB to ${max / 1024 / 1024}MB (e.g. 8MB)`,
    );
  return bytes;
}

/** HERALD_TRANSFORMATION_TIMEOUT: from 1 ms to 10 s, so that no run holds a thread for long. */
function transformationTimeout(env: Env): number {
  const ms = duration(env, 'HERALD_TRANSFORMATION_TIMEOUT', '50ms');
  if (ms < 1 || ms > 10_000) throw new ConfigError('HERALD_TRANSFORMATION_TIMEOUT must be from 1ms to 10s');
  return ms;
}

/** `starter:100,growth:1000` — requests per second per organization for each plan. */
function plans(env: Env): PlanLimits {
  const text = read(env, 'HERALD_PLANS', 'starter:100,growth:1000');
  const result: PlanLimits = { unlimited: null };
  for (const part of text.split(',')) {
    const match = /^([a-z][a-z0-9_-]*):(\d+)$/.exec(part.trim());
    if (!match)
      throw new ConfigError(`HERALD_PLANS=${text} must look like starter:100,growth:1000 (requests per second)`);
    if (match[1] === 'unlimited')
      throw new ConfigError(
        `HERALD_PLANS=${text}: the plan unlimited is built in and never limited; give a limited plan another name`,
      );
    result[match[1]!] = Number(match[2]);
  }
  return result;
}

/** HERALD_REDIS_URL: redis:// or rediss:// (TLS), a Unix socket path, or unset for counters per process. */
function redisUrl(env: Env): string | null {
  const text = env.HERALD_REDIS_URL;
  if (!text) return null;
  if (text.startsWith('/') && !text.startsWith('//')) return text;
  let protocol: string | null = null;
  try {
    protocol = new URL(text).protocol;
  } catch {
    // reported below
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:')
    throw new ConfigError(
      'HERALD_REDIS_URL must be a redis:// or rediss:// URL or a Unix socket path (leave it unset to count per process)',
    );
  return text;
}

function secretKey(env: Env, mode: Mode, dataDir: string): string {
  const given = env.HERALD_SECRET_KEY;
  if (given) {
    if (given.length < 32) throw new ConfigError('HERALD_SECRET_KEY must be at least 32 characters');
    return given;
  }
  if (mode === 'production') throw new ConfigError('HERALD_SECRET_KEY is required when HERALD_MODE=production');
  // Development: generate once into the data dir so restarts can still read the secrets they sealed.
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  ensureDataDir(dataDir);
  // Processes started together on a new data dir (an API and a worker) must end up with one key: each
  // writes its own to a file of its own, and the first to link it into place wins; the others read that one.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(draft);
  }
  return readFileSync(file, 'utf8').trim();
}

/**
 * Creates the data directory if needed, readable by the service's user only (it holds portal links,
 * payloads and receivers' answers); one that cannot be (a file in the way, no permission) is bad
 * configuration. An existing directory keeps the permissions its operator gave it.
 */
export function ensureDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ConfigError(
      `HERALD_DATA_DIR=${dataDir} cannot be used as a directory (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

/** Hosts, addresses and CIDR ranges Live endpoints may reach although not public; a typo must not pass unseen. */
function ssrfAllowList(env: Env): string[] {
  // Compared with URL host names, which come lower-cased and are matched without a trailing dot.
  const entries = read(env, 'HERALD_SSRF_ALLOW', '')
    .split(',')
    .map((s) => s.trim().toLowerCase().replace(/\.$/, ''))
    .filter(Boolean);
  const bad = entries.find((entry) => !isAllowListEntry(entry));
  if (bad !== undefined)
    throw new ConfigError(`HERALD_SSRF_ALLOW entry ${bad} is not a host name, an address or a CIDR range`);
  return entries;
}

/** Retention may not be shorter than the idempotency window: a repeated key must find its message. */
/** From an hour to 30 days: each partition is a table, so a shorter one makes thousands of them. */
function partitionInterval(env: Env): number {
  const ms = duration(env, 'HERALD_PARTITION_INTERVAL', '1d');
  if (ms < 3_600_000 || ms > 30 * 86_400_000) throw new ConfigError('HERALD_PARTITION_INTERVAL must be from 1h to 30d');
  return ms;
}

function retention(env: Env): number {
  const retentionMs = duration(env, 'HERALD_RETENTION', '30d');
  if (retentionMs < duration(env, 'HERALD_IDEMPOTENCY_TTL', '24h'))
    throw new ConfigError('HERALD_RETENTION must be at least HERALD_IDEMPOTENCY_TTL');
  return retentionMs;
}

/**
 * Development mode listens on loopback only: its bootstrap route hands an organization and keys to anyone
 * who can reach it, so a development service on a shared network must be opted into on purpose.
 */
function listenHost(env: Env, mode: Mode): string {
  const host = read(env, 'HOST', '127.0.0.1');
  if (mode === 'development' && !isLoopbackHost(host) && env.HERALD_DEV_ALLOW_REMOTE !== '1')
    throw new ConfigError(
      `HOST=${host} is not a loopback address: development mode listens on loopback only (its bootstrap route hands out keys); use HERALD_MODE=production, or set HERALD_DEV_ALLOW_REMOTE=1`,
    );
  return host;
}

/** HERALD_SECRET_KEY_PREVIOUS: comma-separated earlier master keys, each as long as a master key must be. */
function previousSecretKeys(env: Env): string[] {
  const keys = read(env, 'HERALD_SECRET_KEY_PREVIOUS', '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
  if (keys.some((key) => key.length < 32))
    throw new ConfigError('HERALD_SECRET_KEY_PREVIOUS: each key must be at least 32 characters');
  return keys;
}

function requestTimeout(env: Env): number {
  const ms = duration(env, 'HERALD_REQUEST_TIMEOUT', '30s');
  if (ms < 100) throw new ConfigError('HERALD_REQUEST_TIMEOUT must be at least 100ms');
  return ms;
}

/** HERALD_METRICS_TOKEN: sent as a bearer token, so it must be one (no spaces), and long enough not to be guessed. */
function metricsToken(env: Env): string | null {
  const token = env.HERALD_METRICS_TOKEN;
  if (!token) return null;
  if (!/^[\x21-\x7e]{16,512}$/.test(token))
    throw new ConfigError('HERALD_METRICS_TOKEN must be 16 to 512 printable characters without spaces');
  return token;
}

/** Whether the OTEL_* variables ask for spans to be exported (Config.tracing); a kind Herald cannot send is refused. */
function tracing(env: Env): boolean {
  if (read(env, 'OTEL_SDK_DISABLED', 'false').toLowerCase() === 'true') return false;
  const exporters = read(env, 'OTEL_TRACES_EXPORTER', 'otlp')
    .split(',')
    .map((name) => name.trim());
  if (exporters.includes('none')) return false;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return false;
  if (exporters.some((name) => name !== 'otlp'))
    throw new ConfigError(`OTEL_TRACES_EXPORTER=${exporters.join(',')}: Herald exports spans with otlp only`);
  const protocol = read(
    env,
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    read(env, 'OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json'),
  );
  if (protocol !== 'http/json')
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: Herald exports spans as OTLP over HTTP with JSON (http/json)`,
    );
  return true;
}

/** HERALD_METRICS_PORT: unset serves no metrics in a `worker` process (API processes serve them on the API). */
function metricsPort(env: Env): number | null {
  if (!env.HERALD_METRICS_PORT) return null;
  return integer(env, 'HERALD_METRICS_PORT', 0, 0, 65535);
}

/** `text` as a URL; what does not parse as the URL `invalid:`, which every check below refuses. */
function urlOrInvalid(text: string): URL {
  try {
    return new URL(text);
  } catch {
    return new URL('invalid:');
  }
}

/**
 * HERALD_OUTBOUND_PROXY: an http:// URL of host and port, with optional credentials (sent to the proxy as
 * Proxy-Authorization). The value is never echoed in an error: it may hold a password.
 */
function outboundProxy(env: Env): string | null {
  const text = env.HERALD_OUTBOUND_PROXY;
  if (!text) return null;
  const url = urlOrInvalid(text);
  const bare = (url.pathname === '/' || url.pathname === '') && url.search === '' && url.hash === '';
  if (url.protocol !== 'http:' || url.hostname === '' || !bare)
    throw new ConfigError('HERALD_OUTBOUND_PROXY must look like http://host:port or http://user:password@host:port');
  return url.href;
}

/**
 * HERALD_PUBLIC_URL: an http:// or https:// URL with a host, perhaps a port and a path, and no credentials,
 * query or fragment. Kept without its trailing slash, so a link is the URL and then `/portal/<token>`.
 */
function publicUrl(env: Env): string | null {
  const text = env.HERALD_PUBLIC_URL;
  if (!text) return null;
  const url = urlOrInvalid(text);
  const plain = url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  if (!['http:', 'https:'].includes(url.protocol) || url.hostname === '' || !plain || /[?#]/.test(text))
    throw new ConfigError(
      `HERALD_PUBLIC_URL=${text} must be an http:// or https:// URL with a host and no credentials, query or fragment, e.g. https://hooks.example.com`,
    );
  return url.href.replace(/\/+$/, '');
}

/**
 * HERALD_NO_PROXY: comma-separated host names (each also matches its subdomains; a leading dot is
 * allowed), addresses and CIDR ranges (matching receivers addressed by IP).
 */
function noProxy(env: Env): string[] {
  const entries = read(env, 'HERALD_NO_PROXY', '')
    .split(',')
    .map((s) => s.trim().toLowerCase().replace(/\.$/, '').replace(/^\./, ''))
    .filter(Boolean);
  const bad = entries.find((entry) => !isAllowListEntry(entry.replace(/^\[|\]$/g, '')));
  if (bad !== undefined)
    throw new ConfigError(`HERALD_NO_PROXY entry ${bad} is not a host name, a domain, an address or a CIDR range`);
  return entries.map((entry) => entry.replace(/^\[|\]$/g, ''));
}

/**
 * HERALD_TRUST_PROXY: unset (the socket's peer is the client), a hop count (the client is that many
 * addresses from the right of X-Forwarded-For), or comma-separated addresses and CIDR ranges of the
 * proxies whose X-Forwarded-For is believed.
 */
function trustProxy(env: Env): false | number | string[] {
  const text = read(env, 'HERALD_TRUST_PROXY', '').trim();
  if (text === '') return false;
  if (/^\d+$/.test(text)) return integer(env, 'HERALD_TRUST_PROXY', 0, 1, 100);
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = entries.find((entry) => !(entry.includes('/') || isIP(entry)) || !isAllowListEntry(entry.toLowerCase()));
  if (bad !== undefined || entries.length === 0)
    throw new ConfigError(
      `HERALD_TRUST_PROXY=${text} must be a hop count (1 to 100) or comma-separated addresses and CIDR ranges of trusted proxies`,
    );
  return entries;
}

/** HERALD_CIRCUIT_FAILURE_RATIO, _MIN_ATTEMPTS, _WINDOW, _COOLDOWN and _MAX_COOLDOWN (decisions, "Delivery policy"). */
function circuitDefaults(env: Env): CircuitDefaults {
  const ratioText = read(env, 'HERALD_CIRCUIT_FAILURE_RATIO', '0.5');
  const failureRatio = Number(ratioText);
  if (!/^\d*\.?\d+$/.test(ratioText) || failureRatio <= 0 || failureRatio > 1)
    throw new ConfigError(`HERALD_CIRCUIT_FAILURE_RATIO=${ratioText} must be a number above 0 and at most 1`);
  const windowMs = duration(env, 'HERALD_CIRCUIT_WINDOW', '60s');
  const cooldownMs = duration(env, 'HERALD_CIRCUIT_COOLDOWN', '30s');
  const maxCooldownMs = duration(env, 'HERALD_CIRCUIT_MAX_COOLDOWN', '10m');
  if (windowMs < 1000 || cooldownMs < 100)
    throw new ConfigError('HERALD_CIRCUIT_WINDOW must be 1s or more, HERALD_CIRCUIT_COOLDOWN 100ms or more');
  if (maxCooldownMs < cooldownMs)
    throw new ConfigError('HERALD_CIRCUIT_MAX_COOLDOWN must be at least HERALD_CIRCUIT_COOLDOWN');
  return {
    failureRatio,
    minAttempts: integer(env, 'HERALD_CIRCUIT_MIN_ATTEMPTS', 20, 1, 1_000_000),
    windowMs,
    cooldownMs,
    maxCooldownMs,
  };
}

/** HERALD_MAX_DELIVER_AHEAD (decisions: default 7d, at most 400d). */
function maxDeliverAhead(env: Env): number {
  const ms = duration(env, 'HERALD_MAX_DELIVER_AHEAD', '7d');
  if (ms < 1000 || ms > 400 * 86_400_000) throw new ConfigError('HERALD_MAX_DELIVER_AHEAD must be between 1s and 400d');
  return ms;
}

export function loadConfig(env: Env = process.env): Config {
  const mode = oneOf<Mode>(env, 'HERALD_MODE', 'development', ['development', 'production']);
  const dataDir = resolve(read(env, 'HERALD_DATA_DIR', './data'));
  const scheduleText = read(env, 'HERALD_RETRY_SCHEDULE', '0s,5s,5m,30m,2h,5h,10h,10h');
  const retryScheduleMs = scheduleText.split(',').map((part) => {
    const ms = parseDuration(part);
    if (ms === null)
      throw new ConfigError(`HERALD_RETRY_SCHEDULE=${scheduleText} must be a comma-separated list of durations`);
    return ms;
  });
  const databaseUrl = env.HERALD_DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('HERALD_DATABASE_URL must start with postgres:// (leave it unset for the embedded store)');
  }
  const attemptTimeoutMs = duration(env, 'HERALD_ATTEMPT_TIMEOUT', '15s');
  if (attemptTimeoutMs < 1) throw new ConfigError('HERALD_ATTEMPT_TIMEOUT must be at least 1ms');
  // A claimed delivery is leased for this long; it must outlast an attempt or two workers could send it at once.
  const leaseMs = duration(env, 'HERALD_LEASE', `${Math.max(60_000, attemptTimeoutMs * 2 + 30_000)}ms`);
  if (leaseMs <= attemptTimeoutMs) throw new ConfigError('HERALD_LEASE must be longer than HERALD_ATTEMPT_TIMEOUT');
  const planLimits = plans(env);
  const defaultPlan = read(env, 'HERALD_DEFAULT_PLAN', 'starter');
  if (!(defaultPlan in planLimits)) {
    throw new ConfigError(
      `HERALD_DEFAULT_PLAN=${defaultPlan} is not a plan (have ${Object.keys(planLimits).join(', ')})`,
    );
  }
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: listenHost(env, mode),
    databaseUrl,
    dataDir,
    mode,
    secretKey: secretKey(env, mode, dataDir),
    role: oneOf<Role>(env, 'HERALD_ROLE', 'all', ['api', 'worker', 'all']),
    retryScheduleMs,
    maxDeliverAheadMs: maxDeliverAhead(env),
    circuit: circuitDefaults(env),
    attemptTimeoutMs,
    secretGraceMs: duration(env, 'HERALD_SECRET_GRACE', '24h'),
    disableAfterMs: duration(env, 'HERALD_DISABLE_AFTER', '5d'),
    idempotencyTtlMs: duration(env, 'HERALD_IDEMPOTENCY_TTL', '24h'),
    maxPayloadBytes: integer(env, 'HERALD_MAX_PAYLOAD_BYTES', 524288, 1024),
    retentionMs: retention(env),
    auditRetentionMs: duration(env, 'HERALD_AUDIT_RETENTION', '365d'),
    partitionIntervalMs: partitionInterval(env),
    partitionsAhead: integer(env, 'HERALD_PARTITIONS_AHEAD', 3, 1, 1000),
    leaseMs,
    concurrency: integer(env, 'HERALD_CONCURRENCY', 256, 1, 100_000),
    endpointConcurrency: integer(env, 'HERALD_ENDPOINT_CONCURRENCY', 16, 1, 10_000),
    plans: planLimits,
    defaultPlan,
    redisUrl: redisUrl(env),
    redisPrefix: read(env, 'HERALD_REDIS_PREFIX', 'herald-rl:'),
    dbPoolSize: integer(env, 'HERALD_DB_POOL_SIZE', 10, 1, 1000),
    ssrfAllow: ssrfAllowList(env),
    logLevel: oneOf(env, 'HERALD_LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    tracing: tracing(env),
    responseBodyLimit: integer(env, 'HERALD_RESPONSE_BODY_LIMIT', 4096, 0, 1_048_576),
    requestTimeoutMs: requestTimeout(env),
    maxEndpointsPerApp: integer(env, 'HERALD_MAX_ENDPOINTS_PER_APP', 1000, 1, 100_000),
    maxEventTypes: integer(env, 'HERALD_MAX_EVENT_TYPES', 1000, 1, 1_000_000),
    schemaCacheBytes: integer(env, 'HERALD_SCHEMA_CACHE_MB', 64, 1, 65_536) * 1024 * 1024,
    schemaCompileDeadlineMs: duration(env, 'HERALD_SCHEMA_COMPILE_DEADLINE', '5s'),
    filterBudget: integer(env, 'HERALD_FILTER_BUDGET', 200_000, 1_000, 100_000_000),
    previousSecretKeys: previousSecretKeys(env),
    // A hosted service's Test endpoints belong to its customers, not to the operator's network.
    testNetwork: oneOf<TestNetwork>(env, 'HERALD_TEST_NETWORK', mode === 'production' ? 'public' : 'private', [
      'private',
      'public',
    ]),
    authFailureLimit: integer(env, 'HERALD_AUTH_FAILURE_LIMIT', 20, 1, 1_000_000),
    metricsToken: metricsToken(env),
    metricsPort: metricsPort(env),
    kafkaIdempotent: oneOf(env, 'HERALD_KAFKA_IDEMPOTENT', 'true', ['true', 'false']) === 'true',
    transformationTimeoutMs: transformationTimeout(env),
    transformationMemoryBytes: byteSize(env, 'HERALD_TRANSFORMATION_MEMORY', '8MB', 1024 * 1024, 1024 * 1024 * 1024),
    transformationThreads: integer(env, 'HERALD_TRANSFORMATION_THREADS', 2, 1, 64),
    outboundProxy: outboundProxy(env),
    noProxy: noProxy(env),
    trustProxy: trustProxy(env),
    publicUrl: publicUrl(env),
  };
}
