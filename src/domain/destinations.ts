import { REDACTED } from './headers.js';

// An endpoint's destination: where its signed messages go when it is not an HTTP receiver (a broker or a
// bucket), with its URL and settings checked once, when they are written. Each type names its URL schemes,
// its settings (`config`), which of them are secrets, and the rules its broker would hold a topic to,
// so that a message a broker would refuse is refused at write time with the field's name.

export const DESTINATION_TYPES = ['rabbitmq', 'nats', 'redis', 'mqtt', 'kafka', 'sqs', 's3'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];
export type EndpointType = 'http' | DestinationType;
export const ENDPOINT_TYPES: readonly EndpointType[] = ['http', ...DESTINATION_TYPES];

/** What a template may name; anything else in braces is refused. */
export const TEMPLATE_PLACEHOLDERS = ['event_type', 'app_id', 'app_uid', 'endpoint_id', 'message_id'] as const;
export type TemplateValues = Record<(typeof TEMPLATE_PLACEHOLDERS)[number], string>;

/** A destination's settings as stored: every field present, defaults filled in, secrets apart. */
export type DestinationSettings = Record<string, string | number | boolean | null | Record<string, string>>;

/** The secret parts: the URL's password and the secret fields of `config` (`sasl.password` as `sasl_password`). */
export type DestinationSecrets = Partial<Record<'password' | 'token' | 'sasl_password' | 'secret_access_key', string>>;

/**
 * A destination as its `destination` column holds it: its type and application (both fixed for the
 * endpoint's life), its settings and the names of its sealed secrets. Self-contained, so that a claim
 * reads a destination with two columns, both null for an HTTP endpoint.
 */
export interface StoredDestination {
  type: DestinationType;
  appId: string;
  settings: DestinationSettings;
  sealed: string[];
}

/** The `destination` column read; null for an HTTP endpoint. */
export function storedDestination(text: string | null): StoredDestination | null {
  return text === null ? null : (JSON.parse(text) as StoredDestination);
}

/** A destination opened for sending: the URL with its password back in, the settings with their secrets. */
export interface Destination {
  type: DestinationType;
  /** The endpoint's application (templates name it). */
  appId: string;
  url: string;
  settings: DestinationSettings;
  secrets: DestinationSecrets;
}

/** A checked destination, ready to store: the URL without its password, settings and secrets apart. */
export interface CheckedDestination {
  url: string;
  settings: DestinationSettings;
  secrets: DestinationSecrets;
}

type Field =
  | { kind: 'template'; default?: string; required?: boolean; check?: (literal: string) => string | null }
  | { kind: 'string'; default?: string; required?: boolean; secret?: keyof DestinationSecrets }
  | { kind: 'boolean'; default: boolean }
  | { kind: 'integer'; min: number; max: number; default?: number; allowed?: number[] }
  | { kind: 'sasl' };

interface TypeRule {
  schemes: string[];
  fields: Record<string, Field>;
  /** The URL's own check beyond its scheme (a host list, a bucket name). */
  url?: (url: URL, text: string) => string | null;
}

/** MQTT: a publish topic holds no wildcard and no NUL (MQTT 5, 4.7). */
const mqttTopic = (literal: string) =>
  /[+#]/.test(literal)
    ? 'must not contain the wildcards + or # (a publish topic names one topic)'
    : literal.includes(String.fromCharCode(0))
      ? 'must not contain a NUL character'
      : null;
/** NATS: a publish subject has no whitespace, no wildcard and no empty token. */
const natsSubject = (literal: string) =>
  /[\s*>]/.test(literal)
    ? 'must not contain whitespace or the wildcards * and >'
    : /^\.|\.$|\.\./.test(literal)
      ? 'must not have an empty token (a leading, trailing or double dot)'
      : null;
/** Kafka: topic names are letters, digits, `.`, `_` and `-`, at most 249. */
const kafkaTopic = (literal: string) =>
  /[^A-Za-z0-9._-]/.test(literal) ? 'may hold only letters, digits, ".", "_" and "-" (Kafka topic names)' : null;
/** S3: an object key is at most 1,024 bytes; the template's own text must leave room for its values. */
const s3Key = (literal: string) =>
  Buffer.byteLength(literal) > 512 ? 'is too long: an S3 object key is at most 1024 bytes' : null;

const AWS_FIELDS: Record<string, Field> = {
  region: { kind: 'string', required: true },
  access_key_id: { kind: 'string', required: true },
  secret_access_key: { kind: 'string', required: true, secret: 'secret_access_key' },
  endpoint_url: { kind: 'string' },
};

const RULES: Record<DestinationType, TypeRule> = {
  rabbitmq: {
    schemes: ['amqp:', 'amqps:'],
    fields: {
      exchange: { kind: 'string', default: '' },
      routing_key: { kind: 'template', default: '{event_type}' },
    },
  },
  nats: {
    schemes: ['nats:', 'tls:'],
    fields: {
      subject: { kind: 'template', default: 'webhooks.{event_type}', check: natsSubject },
      jetstream: { kind: 'boolean', default: true },
      token: { kind: 'string', secret: 'token' },
    },
  },
  redis: {
    schemes: ['redis:', 'rediss:'],
    fields: {
      stream: { kind: 'template', default: 'webhooks' },
      maxlen: { kind: 'integer', min: 1, max: 1_000_000_000 },
    },
  },
  mqtt: {
    schemes: ['mqtt:', 'mqtts:'],
    fields: {
      topic: { kind: 'template', default: 'webhooks/{event_type}', check: mqttTopic },
      qos: { kind: 'integer', min: 0, max: 2, default: 1 },
    },
  },
  kafka: {
    schemes: ['kafka:'],
    fields: {
      topic: { kind: 'template', required: true, check: kafkaTopic },
      key: { kind: 'template', default: '{app_id}' },
      sasl: { kind: 'sasl' },
      tls: { kind: 'boolean', default: false },
    },
    url: (_url, text) => kafkaBrokersProblem(text),
  },
  sqs: {
    schemes: ['https:', 'http:'],
    fields: AWS_FIELDS,
  },
  s3: {
    schemes: ['s3:'],
    fields: {
      ...AWS_FIELDS,
      key: { kind: 'template', default: '{app_id}/{event_type}/{message_id}.json', check: s3Key },
    },
    url: (url) =>
      /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(url.hostname) && url.pathname.replace(/^\/$/, '') === ''
        ? null
        : 'must be s3://bucket, with a valid bucket name and no path',
  },
};

export function isDestinationType(type: string): type is DestinationType {
  return (DESTINATION_TYPES as readonly string[]).includes(type);
}

/** The hosts and ports of a `kafka://host:port[,host:port…]` URL, or why it is not one. */
export function kafkaBrokers(text: string): { host: string; port: number }[] | string {
  const rest = text.replace(/^kafka:\/\//, '');
  if (rest === text || rest === '') return 'must be kafka://host:port[,host:port…]';
  const brokers: { host: string; port: number }[] = [];
  for (const part of rest.replace(/\/$/, '').split(',')) {
    const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(part);
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535)
      return 'must be kafka://host:port[,host:port…] (each broker with its port)';
    brokers.push({ host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) });
  }
  return brokers;
}

function kafkaBrokersProblem(text: string): string | null {
  const brokers = kafkaBrokers(text);
  return typeof brokers === 'string' ? brokers : null;
}

/** The template's literal text (placeholders taken out), or why it is refused. */
export function templateProblem(template: string): string | null {
  for (const match of template.matchAll(/\{([^{}]*)\}/g)) {
    if (!(TEMPLATE_PLACEHOLDERS as readonly string[]).includes(match[1]!))
      return `has an unknown placeholder {${match[1]}} (known: ${TEMPLATE_PLACEHOLDERS.map((p) => `{${p}}`).join(', ')})`;
  }
  if (/[{}]/.test(template.replace(/\{[a-z_]+\}/g, ''))) return 'has an unmatched brace';
  return null;
}

/** The template with its placeholders filled in. */
export function renderTemplate(template: string, values: TemplateValues): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: keyof TemplateValues) => values[name] ?? '');
}

/** Whether a template names `{app_uid}` (the worker then looks the application's uid up). */
export function namesAppUid(settings: DestinationSettings): boolean {
  return Object.values(settings).some((v) => typeof v === 'string' && v.includes('{app_uid}'));
}

/** The rendered topic, subject or key checked again with the values in (an event type may bring a character). */
export function renderedProblem(type: DestinationType, field: string, value: string): string | null {
  const rule = RULES[type].fields[field];
  if (value === '' && field !== 'routing_key') return `${field} is empty once rendered`;
  if (rule?.kind === 'template' && rule.check) {
    const problem = rule.check(value);
    if (problem) return `${field} "${value.slice(0, 200)}" ${problem}`;
  }
  if (type === 's3' && Buffer.byteLength(value) > 1024) return 'key is longer than 1024 bytes once rendered';
  if (type === 'kafka' && field === 'topic' && value.length > 249) return 'topic is longer than 249 characters';
  return null;
}

/**
 * Checks a destination's URL and config for `type` and returns it ready to store, or a problem naming the
 * field. `current` is what is stored: a secret sent back as "<redacted>" keeps the stored one, and a URL
 * whose password is "<redacted>" keeps the stored password.
 */
export function checkedDestination(
  type: DestinationType,
  urlText: string,
  config: Record<string, unknown> | undefined,
  current: { url: string; settings: DestinationSettings; secrets: DestinationSecrets } | null,
): CheckedDestination | string {
  const rule = RULES[type];
  // The password may be written "<redacted>" (it stands for the stored one), which a URL would encode.
  const text = urlText.replace(`:${REDACTED}@`, ':%3Credacted%3E@');
  if (text.length > 2048) return 'url must be at most 2048 characters';
  let url: URL;
  try {
    // A list of brokers is no URL the parser takes: the first one stands for the rest here, and
    // kafkaBrokers checks them all.
    url = new URL(type === 'kafka' ? text.replace(/,[^/@]*/, '') : text);
  } catch {
    return `url is not a valid ${type} URL`;
  }
  if (!rule.schemes.includes(url.protocol))
    return `url must use ${rule.schemes.map((s) => s.slice(0, -1)).join(' or ')} for a ${type} endpoint`;
  if (url.hostname === '') return 'url must name a host';
  const secrets: DestinationSecrets = {};
  if (url.password !== '') {
    if (type === 'kafka' || type === 'sqs' || type === 's3')
      return `url must not hold a password for a ${type} endpoint (config holds its credentials)`;
    const password = decodeURIComponent(url.password);
    if (password === REDACTED) {
      if (current?.secrets.password === undefined) return 'url has a "<redacted>" password but none is stored';
      secrets.password = current.secrets.password;
    } else secrets.password = password;
    url.password = '';
  }
  const urlProblem = rule.url?.(url, text);
  if (urlProblem) return `url ${urlProblem}`;
  const given = config ?? {};
  for (const name of Object.keys(given))
    if (!(name in rule.fields))
      return `config.${name} is not a field of a ${type} endpoint (fields: ${Object.keys(rule.fields).join(', ')})`;
  const settings: DestinationSettings = {};
  for (const [name, field] of Object.entries(rule.fields)) {
    const value = given[name];
    const problem = checkField(name, field, value, settings, secrets, current);
    if (problem) return `config.${name}${problem.startsWith('.') ? '' : ' '}${problem}`;
  }
  if (typeof settings.endpoint_url === 'string' && !/^https?:\/\/[^/\s]+/.test(settings.endpoint_url))
    return 'config.endpoint_url must be an http or https URL';
  const stored = type === 'kafka' ? text.replace(/\/$/, '') : url.toString();
  return { url: stored, settings, secrets };
}

function checkField(
  name: string,
  field: Field,
  value: unknown,
  settings: DestinationSettings,
  secrets: DestinationSecrets,
  current: { secrets: DestinationSecrets } | null,
): string | null {
  switch (field.kind) {
    case 'template':
    case 'string': {
      if (value === undefined || value === null) {
        if (field.required) return 'is required';
        // A secret not set is simply absent; reads show it null (shownConfig).
        if (field.kind === 'template' || !field.secret) settings[name] = field.default ?? null;
        return null;
      }
      if (typeof value !== 'string') return 'must be a string';
      if (value.length > 1024) return 'must be at most 1024 characters';
      if (field.kind === 'template') {
        if (value === '' && name !== 'routing_key') return 'must not be empty';
        const problem = templateProblem(value) ?? field.check?.(value.replace(/\{[a-z_]+\}/g, 'x')) ?? null;
        if (problem) return problem;
        settings[name] = value;
        return null;
      }
      if (field.secret) {
        const kept = value === REDACTED ? current?.secrets[field.secret] : value;
        if (kept === undefined) return 'is "<redacted>" but none is stored';
        secrets[field.secret] = kept;
        return null;
      }
      settings[name] = value;
      return null;
    }
    case 'boolean':
      if (value === undefined || value === null) settings[name] = field.default;
      else if (typeof value !== 'boolean') return 'must be true or false';
      else settings[name] = value;
      return null;
    case 'integer':
      if (value === undefined || value === null) settings[name] = field.default ?? null;
      else if (!Number.isInteger(value) || (value as number) < field.min || (value as number) > field.max)
        return `must be an integer from ${field.min} to ${field.max}`;
      else settings[name] = value as number;
      return null;
    case 'sasl': {
      if (value === undefined || value === null) {
        settings[name] = null;
        return null;
      }
      if (typeof value !== 'object' || Array.isArray(value)) return 'must be an object {mechanism, username, password}';
      const sasl = value as Record<string, unknown>;
      for (const key of Object.keys(sasl))
        if (!['mechanism', 'username', 'password'].includes(key)) return `.${key} is not a field of sasl`;
      if (!['plain', 'scram-sha-256', 'scram-sha-512'].includes(sasl.mechanism as string))
        return '.mechanism must be plain, scram-sha-256 or scram-sha-512';
      if (typeof sasl.username !== 'string' || sasl.username === '') return '.username is required';
      if (typeof sasl.password !== 'string' || sasl.password === '') return '.password is required';
      const password = sasl.password === REDACTED ? current?.secrets.sasl_password : sasl.password;
      if (password === undefined) return '.password is "<redacted>" but none is stored';
      secrets.sasl_password = password;
      settings[name] = { mechanism: sasl.mechanism as string, username: sasl.username };
      return null;
    }
  }
}

/** The config as reads show it: every field, secrets as "<redacted>" where one is set. */
export function shownConfig(
  type: DestinationType,
  settings: DestinationSettings,
  /** The secrets stored (their names, DestinationSecrets' keys): each shows as "<redacted>". */
  stored: readonly string[],
): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(RULES[type].fields)) {
    if (field.kind === 'string' && field.secret) {
      shown[name] = stored.includes(field.secret) ? REDACTED : null;
    } else if (field.kind === 'sasl') {
      const sasl = settings[name] as Record<string, string> | null;
      shown[name] = sasl ? { ...sasl, password: REDACTED } : null;
    } else shown[name] = settings[name] ?? null;
  }
  return shown;
}

/** A config field as a form shows it: its kind, default, whether it is required or a secret. */
export interface FormField {
  name: string;
  kind: 'template' | 'string' | 'boolean' | 'integer' | 'sasl';
  default: string | number | boolean | null;
  required: boolean;
  secret: boolean;
}

/** Each type's URL schemes and config fields, for the console's and the portal's forms. */
export function destinationForms(): Record<DestinationType, { schemes: string[]; fields: FormField[] }> {
  const forms = {} as Record<DestinationType, { schemes: string[]; fields: FormField[] }>;
  for (const type of DESTINATION_TYPES) {
    forms[type] = {
      schemes: RULES[type].schemes.map((s) => s.slice(0, -1)),
      fields: Object.entries(RULES[type].fields).map(([name, f]) => ({
        name,
        kind: f.kind,
        default: 'default' in f ? (f.default ?? null) : null,
        required: 'required' in f ? Boolean(f.required) : false,
        secret: f.kind === 'string' && Boolean(f.secret),
      })),
    };
  }
  return forms;
}

/** The URL as reads show it: a stored password as "<redacted>". */
export function shownUrl(url: string, hasPassword: boolean): string {
  const start = url.indexOf('://') + 3;
  if (!hasPassword || start < 3) return url;
  const end = url.indexOf('/', start) === -1 ? url.length : url.indexOf('/', start);
  const at = url.lastIndexOf('@', end);
  return at >= start
    ? `${url.slice(0, at)}:${REDACTED}${url.slice(at)}`
    : `${url.slice(0, start)}:${REDACTED}@${url.slice(start)}`;
}

/** The URL with its password back in, for connecting. */
export function urlWithPassword(url: string, password: string | undefined): string {
  if (password === undefined) return url;
  const parsed = new URL(url);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** The hosts a destination connects to, each with the field that names it, for the address rules. */
export function destinationHosts(
  type: DestinationType,
  url: string,
  settings: DestinationSettings,
): { host: string; field: string }[] {
  const hosts: { host: string; field: string }[] = [];
  if (type === 'kafka') {
    const brokers = kafkaBrokers(url);
    if (typeof brokers !== 'string') for (const b of brokers) hosts.push({ host: b.host, field: 'url' });
  } else if (type !== 's3') hosts.push({ host: new URL(url).hostname.replace(/^\[|\]$/g, ''), field: 'url' });
  if ((type === 'sqs' || type === 's3') && typeof settings.endpoint_url === 'string')
    hosts.push({ host: new URL(settings.endpoint_url).hostname.replace(/^\[|\]$/g, ''), field: 'config.endpoint_url' });
  return hosts;
}
