import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { startTestService, type TestService } from './service.js';
import { bootstrap, Client } from './client.js';

// Property-based API fuzzing from the OpenAPI document: requests for every operation it lists, valid ones
// generated from its schemas and invalid ones (wrong types, missing and extra fields, huge and odd strings,
// bad ids, other organizations' and the other environment's ids, bad headers and encodings), sent to a
// real service one at a time. Each answer must hold these invariants:
// - never a 5xx, and never a 2xx to a body that is not UTF-8;
// - its status is one the document gives for the operation, and its body matches that status's schema;
// - a 4xx changes nothing stored (every table is read before and after);
// - a resource of another organization or environment is answered as one that does not exist (the same
//   request naming a made-up id gets the same status and error code), and no 2xx answer shows one.
// Used by test/api/fuzz.test.ts (a fixed-seed bounded run) and scripts/fuzz.ts (longer runs, replayable).

type Schema = Record<string, any>;
type Operation = { method: string; path: string; op: Schema };

/** Where a request's resource id comes from. */
type Ref = 'own' | 'foreign' | 'random' | 'none';

export interface FuzzRequest {
  method: string;
  /** The OpenAPI path it was made from (the operation). */
  route: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  /** Sent as is; `bytes` is a body that is not valid UTF-8. */
  body?: { text: string } | { bytes: number[] };
  /** Which caller's key is sent: index into the world's scopes, or a kind of bad credential. */
  auth: number | 'none' | 'malformed' | 'unknown';
  /** Index of the scope the path's id (or the body's app_id) belongs to, when it is a fixture's. */
  refScope: number | null;
  ref: Ref;
  /** The fixture's id (or event type name) the request names, when it names one. */
  refId: string | null;
}

/** One organization's environment: its key and one of each resource. */
interface Scope {
  name: string;
  client: Client;
  app: string;
  endpoint: string;
  message: string;
  delivery: string;
  eventType: string;
  apiKey: string;
}

/** Resources by the first segment after /api/v1 of the paths that name them. */
const RESOURCE: Record<string, keyof Scope> = {
  messages: 'message',
  applications: 'app',
  endpoints: 'endpoint',
  deliveries: 'delivery',
  'event-types': 'eventType',
  'api-keys': 'apiKey',
  // The Svix-compatible surface names the application first (its other ids are random here). Its event
  // types are left out: a PUT of a name creates the event type in the caller's environment, as Svix's does.
  app: 'app',
};

/** Tables whose content a 4xx must leave as it was (workers' heartbeats change on their own). */
const TABLES = [
  'organizations',
  'api_keys',
  'event_types',
  'applications',
  'endpoints',
  'messages',
  'payloads',
  'idempotency_keys',
  'deliveries',
  'attempts',
] as const;

const ODD_STRINGS = [
  '',
  ' ',
  'x'.repeat(3000),
  'a\u0000b',
  '\ud800',
  '../../etc/passwd',
  '%00',
  '%ff',
  '%',
  '%E0%A4%A',
  '%2e%2e%2fhealthz',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a lookup string some loggers expand, sent as text
  '${jndi:ldap://x}',
  "' or 1=1 --",
  '\u202e\u0301',
  '🦄'.repeat(300),
  'app_00000000000000000000000000',
  'ep_zzzzzzzzzzzzzzzzzzzzzzzzzz',
];

/** Path segments sent without encoding them: percent-escapes, some malformed, one of a NUL. */
const RAW_ESCAPES = new Set(['%00', '%ff', '%', '%E0%A4%A', '%2e%2e%2fhealthz']);

const ODD_VALUES: unknown[] = [null, true, -1, 0, 1.5, 1e308, [], [null], {}, { $gt: '' }, ...ODD_STRINGS];

const ODD_BODIES = ['null', '[]', '{', '"x"', '1', '{"__proto__":{"x":1}}', `${'['.repeat(150)}${']'.repeat(150)}`];

export interface World {
  service: TestService;
  doc: Schema;
  operations: Operation[];
  scopes: Scope[];
  stop(): Promise<void>;
}

/** A service with two organizations, each with a Test and a Live key and one resource of each kind in both. */
export async function startWorld(env: Record<string, string> = {}): Promise<World> {
  const service = await startTestService({
    HERALD_ROLE: 'api',
    ...env,
  });
  try {
    const doc = (await new Client(service.url).get('/api/v1/openapi.json')).body as Schema;
    const operations: Operation[] = Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(
      ([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
    );
    const scopes: Scope[] = [];
    for (const org of ['a', 'b']) {
      const { test, live } = await bootstrap(service.url, `Fuzz ${org}`);
      for (const [env, client] of [
        ['test', test],
        ['live', live],
      ] as const) {
        scopes.push(await fixtures(`${org}_${env}`, client));
      }
    }
    return { service, doc, operations, scopes, stop: () => service.stop() };
  } catch (error) {
    await service.stop();
    throw error;
  }
}

async function must(reply: Promise<{ status: number; body: any }>, what: string): Promise<any> {
  const { status, body } = await reply;
  if (status >= 300) throw new Error(`fixture ${what}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** One of each resource in the client's environment, named after the scope. */
async function fixtures(name: string, client: Client): Promise<Scope> {
  const live = name.endsWith('live');
  const eventType = `fuzz.${name}`;
  const existing = await client.get(`/api/v1/event-types/${eventType}`);
  if (existing.status === 404) await must(client.post('/api/v1/event-types', { name: eventType }), 'event type');
  const app = await must(client.post('/api/v1/applications', { name: `App ${name}` }), 'application');
  const url = live ? 'https://example.com/fuzz' : 'http://127.0.0.1:9/fuzz';
  const endpoint = await must(client.post('/api/v1/endpoints', { app_id: app.id, url }), 'endpoint');
  const message = await must(
    client.post('/api/v1/messages', { app_id: app.id, event_type: eventType, payload: { n: 1 } }),
    'message',
  );
  const apiKey = await must(client.post('/api/v1/api-keys', { name: `spare ${name}` }), 'api key');
  return {
    name,
    client,
    app: app.id,
    endpoint: endpoint.id,
    message: message.id,
    delivery: message.delivery_ids[0],
    eventType,
    apiKey: apiKey.id,
  };
}

/** Strings matching a pattern; fast-check has no lookarounds, so those are dropped and checked afterwards. */
function matching(pattern: string, maxLength: number): fc.Arbitrary<string> {
  const regex = new RegExp(pattern);
  const simpler = new RegExp(pattern.replace(/\(\?<?[!=][^)]*\)/g, ''));
  return fc.stringMatching(simpler).filter((text) => regex.test(text) && text.length <= maxLength);
}

/** A value for a schema: what the schema allows, with short strings and lists. */
function fromSchema(schema: Schema | undefined, hint?: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  if (!schema) return fc.jsonValue({ maxDepth: 2 });
  if (hint) return fc.oneof({ weight: 6, arbitrary: hint }, { weight: 1, arbitrary: fromSchema(schema) });
  if (schema.anyOf) return fc.oneof(...(schema.anyOf as Schema[]).map((s) => fromSchema(s)));
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const nullable = (arb: fc.Arbitrary<unknown>) => (schema.nullable ? fc.option(arb, { nil: null }) : arb);
  switch (schema.type) {
    case 'string': {
      if (schema.pattern) return nullable(matching(schema.pattern, schema.maxLength ?? 255));
      const minLength = schema.minLength ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, 40));
      return nullable(
        fc.oneof(
          { weight: 6, arbitrary: fc.string({ minLength, maxLength }) },
          { weight: 2, arbitrary: fc.string({ minLength, maxLength, unit: 'grapheme' }) },
          { weight: 1, arbitrary: fc.string({ minLength, maxLength: Math.min(maxLength, 12), unit: 'binary' }) },
        ),
      );
    }
    case 'integer':
      return nullable(fc.integer({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 }));
    case 'number':
      return nullable(fc.double({ noNaN: true, noDefaultInfinity: true }));
    case 'boolean':
      return nullable(fc.boolean());
    case 'array': {
      const maxLength = Math.min(schema.maxItems ?? 4, 4);
      const items = fromSchema(schema.items);
      return nullable(
        schema.uniqueItems
          ? fc.uniqueArray(items, { maxLength, selector: (v) => JSON.stringify(v) })
          : fc.array(items, { maxLength }),
      );
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      if (Object.keys(properties).length === 0)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
      return fc.record(Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, fromSchema(s)])), {
        requiredKeys: schema.required ?? [],
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A body for a route: valid from its schema (with fixtures' values for the fields that name them), or one mutation of it. */
function bodyArb(
  schema: Schema,
  hints: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<{ value: unknown; valid: boolean } | { raw: string | number[] }> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required: string[] = schema.required ?? [];
  const valid = fc.record(
    Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, fromSchema(s, hints[k])])),
    { requiredKeys: required },
  );
  const names = Object.keys(properties);
  const odd = fc.oneof(
    fc.constantFrom(...ODD_VALUES),
    fc.jsonValue({ maxDepth: 3 }),
    fc.nat(20_000).map((n) => 'x'.repeat(n)),
  );
  const mutations: fc.Arbitrary<{ value: unknown; valid: boolean } | { raw: string | number[] }>[] = [
    valid.map((value) => ({ value, valid: true })),
    fc.tuple(valid, fc.string({ minLength: 1, maxLength: 10 }), fc.jsonValue({ maxDepth: 2 })).map(([v, k, x]) => ({
      value: { ...(v as object), [k]: x },
      valid: false,
    })),
    fc.constantFrom(...ODD_BODIES).map((raw) => ({ raw })),
    fc.string({ maxLength: 50 }).map((raw) => ({ raw })),
    fc.array(fc.integer({ min: 128, max: 255 }), { minLength: 1, maxLength: 20 }).map((bytes) => ({ raw: bytes })),
    // A valid body with bytes that are not UTF-8 inside its first string.
    fc.tuple(valid, fc.constantFrom([0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80])).map(([v, bad]) => {
      const text = Buffer.from(JSON.stringify(v));
      const at = text.indexOf('":"') + 3;
      return { raw: at > 2 ? [...text.subarray(0, at), ...bad, ...text.subarray(at)] : [...bad, ...text] };
    }),
  ];
  if (names.length > 0)
    mutations.push(
      fc
        .tuple(valid, fc.constantFrom(...names), odd)
        .map(([v, k, x]) => ({ value: { ...(v as object), [k]: x }, valid: false })),
    );
  if (required.length > 0)
    mutations.push(
      fc.tuple(valid, fc.constantFrom(...required)).map(([v, k]) => {
        const copy = { ...(v as Record<string, unknown>) };
        delete copy[k];
        return { value: copy, valid: false };
      }),
    );
  return fc.oneof(
    { weight: 4, arbitrary: mutations[0]! },
    ...mutations.slice(1).map((arbitrary) => ({ weight: 1, arbitrary })),
  );
}

/** Requests for every operation of the world's document. */
export function requestArb(world: World): fc.Arbitrary<FuzzRequest> {
  const names = world.scopes.map((s) => s.eventType);
  return fc.oneof(...world.operations.map((operation) => operationArb(world, operation, names)));
}

function operationArb(world: World, { method, path, op }: Operation, names: string[]): fc.Arbitrary<FuzzRequest> {
  const { scopes } = world;
  const resource = RESOURCE[path.split('/')[3] ?? ''];
  const pathParam = /\{([a-z_]+)\}/.exec(path)?.[1];
  const params = (op.parameters ?? []) as Schema[];
  const queryParams = params.filter((p) => p.in === 'query');
  const bodySchema = op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
  // A fixture's scope: mostly the usual caller's (so valid requests find what they name), else any.
  const scopeIndex = fc.oneof(
    { weight: 2, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.nat(scopes.length - 1) },
  );

  // The caller: mostly the first organization's Test key, sometimes its Live key, sometimes no or a bad key.
  const auth = fc.oneof(
    { weight: 12, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.constant(1) },
    { weight: 1, arbitrary: fc.constantFrom('none' as const, 'malformed' as const, 'unknown' as const) },
  );
  // The path's id: a fixture's of some scope, or an odd string.
  const ref = pathParam
    ? fc.oneof(
        {
          // A path whose id names no fixture takes random ids only.
          weight: resource ? 3 : 0,
          arbitrary: scopeIndex.map((i) => ({ ref: 'scope' as const, scope: i, id: '' })),
        },
        {
          weight: 1,
          arbitrary: fc
            .oneof(
              fc.constantFrom(...ODD_STRINGS),
              fc.string({ maxLength: 30 }),
              fc.string({ maxLength: 30, unit: 'grapheme' }),
            )
            .filter((s) => s !== '' && s !== '.' && s !== '..')
            .map((id) => ({ ref: 'random' as const, scope: null, id })),
        },
      )
    : fc.constant({ ref: 'none' as const, scope: null, id: '' });
  const query = fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .record(
          Object.fromEntries(
            queryParams.map((p) => [
              p.name,
              fromSchema(p.schema, p.name === 'app_id' ? scopeIndex.map((i) => scopes[i]!.app) : undefined),
            ]),
          ),
          { requiredKeys: [] },
        )
        .map((q) => ({ q, valid: true })),
    },
    {
      weight: 1,
      arbitrary: fc
        .dictionary(
          fc.constantFrom(...queryParams.map((p) => p.name as string), 'limit', 'cursor', 'extra'),
          fc.oneof(fc.constantFrom(...ODD_STRINGS), fc.string({ maxLength: 20 })),
          { maxKeys: 3 },
        )
        .map((q) => ({ q: q as Record<string, unknown>, valid: false })),
    },
  );
  const appIdHint = scopeIndex.map((i) => ({ scope: i }));
  const body = bodySchema
    ? appIdHint.chain((appRef) =>
        bodyArb(bodySchema, {
          app_id: fc.constant(`@app:${appRef.scope}`),
          url: fc.constantFrom(
            'http://127.0.0.1:9/h',
            'https://example.com/h',
            'http://localhost:9/x',
            'http://169.254.169.254/',
            'ftp://x/',
          ),
          event_type: fc.oneof(fc.constant('invoice.paid'), fc.constantFrom(...names, 'no.such.type')),
          event_types: fc.oneof(fc.subarray(['invoice.paid', names[0]!]), fc.subarray([...names, 'invoice.paid'])),
          payload: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
          status: fc.constantFrom('active', 'disabled'),
        }),
      )
    : fc.constant(undefined);
  const contentType = fc.oneof(
    { weight: 10, arbitrary: fc.constant('application/json') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'text/plain',
        'application/json; charset=latin1',
        'application/x-www-form-urlencoded',
        'application/json; charset=utf-8',
      ),
    },
  );
  const extraHeaders = fc.oneof(
    { weight: 8, arbitrary: fc.constant({} as Record<string, string>) },
    {
      weight: 1,
      arbitrary: fc.record(
        {
          'idempotency-key': fc.oneof(
            fc.string({ minLength: 1, maxLength: 20 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
            fc.constant('x'.repeat(300)),
          ),
          'content-encoding': fc.constantFrom('gzip', 'identity', 'br'),
          accept: fc.constantFrom('text/html', 'application/xml', '*/*'),
        },
        { requiredKeys: [] },
      ),
    },
  );
  return fc
    .record({ auth, ref, query, body, contentType, extraHeaders })
    .map(({ auth, ref, query, body, contentType, extraHeaders }) => {
      const headers: Record<string, string> = { ...extraHeaders };
      const callerScope = typeof auth === 'number' ? auth : null;
      if (auth === 'malformed') headers.authorization = 'Bearer';
      else if (auth === 'unknown') headers.authorization = 'Bearer sk_test_unknownunknownunknownunknown00';
      else if (auth !== 'none') headers.authorization = `Bearer ${scopes[auth]!.client.key}`;
      let id = ref.id;
      if (ref.ref === 'scope' && resource) id = scopes[ref.scope!]![resource] as string;
      // Raw percent-escapes are sent as they are (malformed ones among them); anything else is encoded.
      const segment = RAW_ESCAPES.has(id) ? id : encodeSegment(id);
      // A path's further ids (the Svix surface's endpoint, message or attempt after the application) name nothing.
      const concrete = pathParam
        ? path.replace(`{${pathParam}}`, segment).replace(/\{[a-z_]+\}/g, 'x_doesnotexist')
        : path;
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(query.q)) search.append(k, typeof v === 'string' ? v : JSON.stringify(v));
      let requestBody: FuzzRequest['body'];
      let refScope = ref.ref === 'scope' ? ref.scope : null;
      let refId = ref.ref === 'scope' ? id : null;
      if (body) {
        if ('raw' in body) {
          requestBody = typeof body.raw === 'string' ? { text: body.raw } : { bytes: body.raw };
        } else {
          // The body's app_id names a fixture application: it decides the owner when the path has no id.
          let text = JSON.stringify(body.value);
          const appRef = /"@app:(\d+)"/.exec(text);
          if (appRef) {
            text = text.replace(/"@app:(\d+)"/g, (_, i) => JSON.stringify(scopes[Number(i)]!.app));
            if (refScope === null) {
              refScope = Number(appRef[1]);
              refId = scopes[refScope]!.app;
            }
          }
          requestBody = { text };
        }
        headers['content-type'] = contentType;
      }
      return {
        method,
        route: path,
        path: concrete,
        query: search.toString(),
        headers,
        body: requestBody,
        auth,
        refScope,
        ref:
          refScope !== null ? (refScope === callerScope ? 'own' : 'foreign') : ref.ref === 'random' ? 'random' : 'none',
        refId,
      };
    });
}

/** A path segment for any text: a lone surrogate is sent as U+FFFD, as a UTF-8 client would. */
function encodeSegment(text: string): string {
  return encodeURIComponent((text as unknown as { toWellFormed(): string }).toWellFormed());
}

/** The request with the fixture's id it names replaced by one of the same shape that names nothing. */
export function madeUp(request: FuzzRequest): FuzzRequest {
  const id = request.refId!;
  const cut = id.indexOf('_') + 1;
  const fake = id.startsWith('fuzz.') ? 'fuzz.nothing_here' : id.slice(0, cut) + '0'.repeat(id.length - cut);
  const swap = (text: string) => text.split(id).join(fake);
  const encoded = encodeSegment(id);
  return {
    ...request,
    path: request.path.split(encoded).join(encodeSegment(fake)),
    body: request.body && 'text' in request.body ? { text: swap(request.body.text) } : request.body,
    query: request.query.split(encodeURIComponent(id)).join(encodeURIComponent(fake)),
    refId: fake,
    ref: 'random',
  };
}

/** A digest of every stored row, to tell whether a request changed anything. */
async function snapshot(world: World): Promise<string> {
  const db = world.service.store.ctx.db;
  const hash = createHash('sha256');
  for (const table of TABLES) {
    const rows = await db.selectFrom(table).selectAll().execute();
    const texts = rows.map((row) => JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).sort();
    hash.update(`${table}:${texts.join('\n')}\n`);
  }
  return hash.digest('hex');
}

/** Checks answers against the invariants; keeps the state digest between requests. */
export class Checker {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private before: string | null = null;
  /** Answers seen, by operation and status (`npm run fuzz` prints them). */
  readonly seen = new Map<string, number>();

  constructor(private readonly world: World) {
    (addFormats as unknown as (ajv: Ajv) => void)(this.ajv);
  }

  private validator(request: FuzzRequest, status: number): ValidateFunction | null {
    const key = `${request.method} ${request.route} ${status}`;
    let validate = this.validators.get(key);
    if (!validate) {
      const op = this.world.doc.paths[request.route][request.method.toLowerCase()];
      const response = op.responses[String(status)];
      if (!response) return null;
      const schema = response.content?.['application/json']?.schema ?? {};
      validate = this.ajv.compile(schema);
      this.validators.set(key, validate);
    }
    return validate;
  }

  /** Sends the request and throws an Error describing the first invariant the answer breaks. */
  async check(request: FuzzRequest): Promise<void> {
    this.before ??= await snapshot(this.world);
    const { status, text } = await this.send(request);
    const seenKey = `${request.method} ${request.route} ${status}`;
    this.seen.set(seenKey, (this.seen.get(seenKey) ?? 0) + 1);
    const fail = (why: string) => {
      // What the request changed is unknown: the next one reads the store afresh.
      this.before = null;
      throw new Error(`${why}\n  request: ${JSON.stringify(request)}\n  answer: ${status} ${text.slice(0, 2000)}`);
    };
    if (status >= 500) fail(`a ${status}`);
    if (request.body && 'bytes' in request.body && !isUtf8(Buffer.from(request.body.bytes)) && status < 400)
      fail('a body that is not UTF-8 was accepted (it would be kept as other text than was sent)');
    const validate = this.validator(request, status);
    if (!validate) fail(`status ${status} is not documented for ${request.method} ${request.route}`);
    if (status === 204) {
      if (text !== '') fail('a 204 with a body');
    } else {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        fail('an answer that is not JSON');
      }
      if (!validate!(parsed)) fail(`the answer does not match its schema: ${this.ajv.errorsText(validate!.errors)}`);
    }
    if (request.ref === 'foreign') {
      if (status < 300) fail("another organization's or environment's resource answered 2xx");
      const twin = await this.send(madeUp(request));
      const code = (answer: string) => (JSON.parse(answer) as { error?: { code?: string } }).error?.code;
      if (twin.status !== status || code(twin.text) !== code(text))
        fail(
          `another organization's or environment's resource is told apart from a made-up id (${twin.status} ${twin.text.slice(0, 300)})`,
        );
    }
    if (status < 300 && typeof request.auth === 'number') {
      for (const [i, scope] of this.world.scopes.entries()) {
        if (i === request.auth) continue;
        for (const id of [scope.app, scope.endpoint, scope.message, scope.delivery, scope.apiKey, scope.eventType])
          if (text.includes(id)) fail(`a 2xx answer shows ${id} of ${scope.name}`);
      }
    }
    if (status >= 400) {
      const after = await snapshot(this.world);
      if (after !== this.before) fail(`a ${status} changed what is stored`);
    } else {
      this.before = null;
      // A fixture deleted or revoked is made again, so later requests still find one of each.
      if (request.method === 'DELETE') await this.renew();
    }
  }

  private async send(request: FuzzRequest): Promise<{ status: number; text: string }> {
    const url = `${this.world.service.url}${request.path}${request.query ? `?${request.query}` : ''}`;
    const body = request.body && ('text' in request.body ? request.body.text : new Uint8Array(request.body.bytes));
    const response = await fetch(url, { method: request.method, headers: request.headers, body });
    return { status: response.status, text: await response.text() };
  }

  private async renew(): Promise<void> {
    const { scopes } = this.world;
    for (const [i, scope] of scopes.entries()) {
      const { status } = await scope.client.get(`/api/v1/applications/${scope.app}`);
      const key = (await scope.client.get('/api/v1/api-keys?limit=250')).body.data as { id: string }[];
      const endpoint = await scope.client.get(`/api/v1/endpoints/${scope.endpoint}`);
      if (status === 404 || endpoint.status === 404 || !key.some((k) => k.id === scope.apiKey))
        scopes[i] = await fixtures(scope.name, scope.client);
    }
    this.before = null;
  }
}

/** Runs the property; returns fast-check's details (failed, counterexample, seed and path to replay). */
export async function fuzz(world: World, options: { numRuns: number; seed?: number; path?: string }) {
  const checker = new Checker(world);
  const result = await fc.check(
    fc.asyncProperty(requestArb(world), (request) => checker.check(request)),
    {
      numRuns: options.numRuns,
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(options.path !== undefined ? { path: options.path } : {}),
      // Shrinking replays requests against a store the run has changed: a few hundred tries are plenty.
      maxSkipsPerRun: 100,
    },
  );
  return { ...result, seen: checker.seen };
}
