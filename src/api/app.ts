import { isUtf8 } from 'node:buffer';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyServerOptions,
  type FastifyInstance,
  type FastifyRequest,
} from 'fastify';
import swagger from '@fastify/swagger';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import { newId } from '../domain/ids.js';
import {
  answerClientError,
  answerUnrouted,
  HttpError,
  installErrorHandling,
  internalError,
  invalid,
} from './errors.js';
import { installAuth } from './auth.js';
import { installAccess } from './access.js';
import { installRateLimits } from './rate-limit.js';
import { messageRoutes } from './messages.js';
import { applicationRoutes } from './applications.js';
import { endpointRoutes } from './endpoints.js';
import { operationalEndpointRoutes } from './operational-endpoints.js';
import { deliveryRoutes } from './deliveries.js';
import { eventTypeRoutes } from './event-types.js';
import { apiKeyRoutes } from './api-keys.js';
import { auditLogRoutes } from './audit-log.js';
import { backgroundTaskRoutes } from './background-tasks.js';
import { endpointStatsRoutes } from './endpoint-stats.js';
import { applicationStatsRoutes } from './application-stats.js';
import { systemRoutes } from './system.js';
import { svixDialect, svixRoutes } from './svix/index.js';
import { meaning, SUCCESS_MEANINGS } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { portalRoutes } from '../portal/routes.js';
import { consoleRoutes } from '../console/routes.js';
import { docsPage } from './docs-page.js';
import { favicon } from './favicon.js';
import { root } from './root.js';
import { installMetrics } from '../metrics/http.js';
import { Metrics } from '../metrics/registry.js';
import { SchemaCompiler } from '../event-schemas/compiler.js';
import { Transformations } from '../transformations/index.js';
import { installTracing } from './tracing.js';
import type { Tracer } from '../tracing/port.js';
import { untraced } from '../tracing/tracer.js';

/** Query parameters whose values are not logged: a client may put a credential there (`?api_key=`). */
const SECRET_QUERY_NAME = /key|token|secret|password|auth|signature/i;

/**
 * A request's URL as logged: a portal link's token is its only credential, so it is left out. A portal
 * route is logged as its pattern (whatever spelling reached it: a percent-escape, an absolute URL); any
 * other URL with a portal-like part has that part masked, and credential-like query values too.
 */
function loggedUrl(request: FastifyRequest): string {
  const route = request.routeOptions?.url;
  if (route?.startsWith('/portal/:token')) return route;
  const url = request.url.replace(/portal\/[^/?#]+/gi, 'portal/<token>');
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query + 1) + redactedQuery(url.slice(query + 1));
}

/**
 * The query string with the values of credential-like parameters replaced. A name is judged as the server
 * reads it: `api%5Fkey`, `%6Bey` and `api+key` are spelled differently in the URL, not to the parser. Each
 * escape is decoded on its own (a malformed one elsewhere in the name must not hide the rest).
 */
function redactedQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      if (equals === -1) return part;
      const name = part.slice(0, equals);
      const asRead = name
        .replace(/\+/g, ' ')
        .replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      return SECRET_QUERY_NAME.test(asRead) ? `${name}=<redacted>` : part;
    })
    .join('&');
}

/**
 * Why a body did not parse, without quoting it: V8's message quotes the start of the body, which may be a
 * credential sent by mistake, and error messages are logged.
 */
function jsonProblem(error: Error): string {
  const position = /at position \d+/.exec(error.message)?.[0];
  if (position) return ` (${position})`;
  return /end of JSON input/.test(error.message) ? ' (it ends early)' : '';
}

/** Longest path parameter routed; longer ones are refused with 400 before routing. */
const MAX_PATH_PARAM_CHARS = 512;

/** Bodies are checked strictly (a number is not a string); query strings and headers are coerced. */
function validators() {
  const make = (coerceTypes: boolean) => {
    const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
    (addFormats as unknown as (ajv: Ajv) => void)(ajv);
    return ajv;
  };
  return { body: make(false), other: make(true) };
}

/**
 * A validator compiled on its first use: a start of the service then compiles only the schemas of the
 * routes it serves, not every route's (a hundred routes' worth of ajv compiles is most of a start).
 * fastify reads a failed validation's `errors` from the function it was given, so they are passed on.
 */
function lazyValidator(
  compile: () => ValidateFunction,
): ((data: unknown) => boolean) & { errors?: ValidateFunction['errors'] } {
  let validate: ValidateFunction | undefined;
  const lazy = (data: unknown) => {
    validate ??= compile();
    const valid = validate(data) as boolean;
    lazy.errors = validate.errors;
    return valid;
  };
  lazy.errors = undefined as ValidateFunction['errors'];
  return lazy;
}

/**
 * fastify's own serializers (fast-json-stringify), each compiled on its route's first answer of that
 * status, as validators are (lazyValidator): compiling every documented answer of every route at start
 * was about a third of a start's CPU, and a process serves few of them.
 */
function lazySerializers(
  compileEach: (() => void)[],
): NonNullable<FastifyServerOptions['schemaController']>['compilersFactory'] {
  const factory = SerializerSelector();
  return {
    buildSerializer: (externalSchemas, options) => {
      const compile = factory(externalSchemas, options as never);
      return (route) => {
        let serialize: ((data: unknown) => string) | undefined;
        const compiled = () => {
          serialize ??= compile(route as never);
          return serialize;
        };
        compileEach.push(compiled);
        return (data: unknown) => compiled()(data);
      };
    },
  };
}

/** Each app's serializers yet to be compiled on first use (compileResponseSerializers). */
const serializersOf = new WeakMap<FastifyInstance, (() => void)[]>();

/**
 * Compiles every serializer of `app` now, throwing on the first response schema that does not compile, and
 * answers how many there are: a test's check of the schemas a start no longer compiles.
 */
export function compileResponseSerializers(app: FastifyInstance): number {
  const each = serializersOf.get(app) ?? [];
  for (const compile of each) compile();
  return each.length;
}

/**
 * Deepest nesting of objects and arrays a body may have. JSON.parse takes far deeper, but writing it back
 * out (storing a payload, answering a read) overflowed the stack past a few thousand levels, a 500 no
 * retry could mend, and many receivers' parsers stop at 128 (serde_json) or so.
 */
const MAX_JSON_DEPTH = 100;

/**
 * What a parsed JSON body holds that could not be kept as sent: nesting deeper than `levels` (the walk
 * stops there), or a number too large for a double (1e400 parses as Infinity and would be stored as
 * null), or null when neither.
 */
function unkeepableJson(value: unknown, levels: number): 'depth' | 'number' | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'number';
  if (value === null || typeof value !== 'object') return null;
  if (levels === 0) return 'depth';
  for (const child of Array.isArray(value) ? value : Object.values(value)) {
    const problem = unkeepableJson(child, levels - 1);
    if (problem) return problem;
  }
  return null;
}

/**
 * Why a JSON body would be read as other bytes than were meant, or null: the body is read as UTF-8 text
 * as it arrived, so a compressed body or another charset would be stored garbled.
 */
function unreadableEncoding(headers: FastifyRequest['headers']): string | null {
  const encoding = headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity')
    return `Content-Encoding ${encoding} is not supported; send the body uncompressed`;
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') return `charset ${charset} is not supported; send UTF-8`;
  return null;
}

/**
 * Request bodies are JSON; an empty body is no body (routes without one accept it), anything else must
 * parse. A body of any other type is refused with 415, unless it is empty (`fetch` labels even an empty
 * string body text/plain): fastify's own text/plain parser would hand the text to the route instead.
 */
function installBodyParsers(app: FastifyInstance, maxPayloadBytes: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: maxPayloadBytes },
    (request, raw, done) => {
      const unreadable = unreadableEncoding(request.headers);
      if (unreadable) return done(new HttpError(415, 'invalid_request', unreadable), undefined);
      // Bytes that are not UTF-8 would be read as U+FFFD: stored and delivered as other text than was sent.
      if (!isUtf8(raw as Buffer)) return done(invalid('Body is not valid UTF-8'), undefined);
      const body = (raw as Buffer).toString('utf8');
      if (body.trim() === '') return done(null, undefined);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch (error) {
        return done(invalid(`Body is not valid JSON${jsonProblem(error as Error)}`), undefined);
      }
      const unkeepable = unkeepableJson(parsed, MAX_JSON_DEPTH);
      if (unkeepable === 'depth')
        return done(invalid(`Body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      if (unkeepable === 'number')
        return done(
          invalid('Body holds a number too large to represent (beyond about 1.8e308); send it as a string'),
          undefined,
        );
      done(null, parsed);
    },
  );
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: maxPayloadBytes }, (_request, text, done) => {
    if ((text as string).length === 0) return done(null, undefined);
    done(new HttpError(415, 'invalid_request', 'Content-Type must be application/json'), undefined);
  });
}

// Text the stores cannot keep as sent: PostgreSQL refuses NUL characters in text, and an unpaired
// surrogate is not Unicode (it would be stored as U+FFFD and no longer match what the client sent).
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this pattern finds
const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The first field of a request part (params, query or body) whose text cannot be stored, as `part/name`. */
function unstorableField(part: string, value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  // Only strings and lists of strings: free-form objects (payload, example_json) are stored as JSON
  // text, where such characters are escaped and harmless.
  for (const [name, field] of Object.entries(value)) {
    const strings =
      typeof field === 'string'
        ? [field]
        : Array.isArray(field)
          ? field.filter((item) => typeof item === 'string')
          : [];
    if (strings.some((text) => UNSTORABLE_TEXT.test(text))) return `${part}/${name}`;
  }
  return null;
}

/**
 * Adds the statuses any route may answer before its handler runs to each route's documented responses, so
 * the OpenAPI document lists every status a request can get: 400 on every route (a malformed
 * percent-escape, a path parameter too long, text that cannot be stored, a body that is not JSON),
 * where a body can be sent, 413 (too large) and 415 (not JSON, another charset, compressed), and behind a
 * key 403 (its role or applications). A success
 * status whose meaning the route does not give (schemas/common.ts, `meaning`) gets the usual one (SUCCESS_MEANINGS).
 */
function documentCommonErrors(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<string, Record<string, unknown>> | undefined;
    if (!response) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const withBody = methods.some((method) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method));
    // Behind a key, a key's role or applications may refuse any route (src/api/access.ts).
    const behindKey = !route.config?.public && route.url.startsWith('/api/');
    const added = errors(...(withBody ? [400, 413, 415] : [400]), ...(behindKey ? [403] : []));
    for (const [status, schema] of Object.entries(added)) response[status] ??= schema as never;
    for (const [status, schema] of Object.entries(response)) {
      const usual = SUCCESS_MEANINGS[Number(status)];
      if (usual && schema['x-response-description'] === undefined && schema.description === undefined)
        response[status] = meaning(schema as never, usual);
    }
  });
}

export async function buildApi(
  store: Store,
  config: Config,
  logger: Logger,
  metrics = new Metrics(store.metrics),
  tracer: Tracer = untraced,
  /** The process's transformation pool, shared with its worker (role `all`); its own when not given. */
  sharedTransformations?: Transformations,
) {
  const serializers: (() => void)[] = [];
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    schemaController: { compilersFactory: lazySerializers(serializers) },
    bodyLimit: config.maxPayloadBytes,
    genReqId: () => newId('request'),
    // Each log line of a request carries the request_id that its error envelope shows. fastify's two
    // info lines per request (incoming, completed) cost a tenth of an emit; one line per request
    // is written below instead, with the same request_id.
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }) as never,
    // Behind a load balancer (HERALD_TRUST_PROXY), request.ip is the client's address from X-Forwarded-For:
    // the failed-authentication limit, the rate limits and the request log count that address.
    // A hop count trusts that many addresses from the socket's end of the chain, whoever the peer is: it
    // holds only where every connection comes through the balancer (docs/security.md).
    trustProxy:
      typeof config.trustProxy === 'number'
        ? (_address: string, hop: number) => hop < (config.trustProxy as number)
        : config.trustProxy,
    // Keep-alive connections from load balancers outlive Node's 5 s default.
    keepAliveTimeout: 65_000,
    // A request's headers and body must arrive within HERALD_REQUEST_TIMEOUT, or the connection is answered
    // 408 and closed: a client trickling a body byte by byte must not hold a connection (and its memory)
    // for ever. Node enforces it when it checks its connections, every connectionsCheckingInterval.
    requestTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(5_000, Math.ceil(config.requestTimeoutMs / 4)),
    },
    // Path parameters may be uids (up to 256 characters) or ids; fastify's default refuses over 100.
    // A trailing slash reaches the same route (a portal link pasted with one opened nothing).
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS, ignoreTrailingSlash: true },
    // Refused by the HTTP parser, before fastify: the envelope too.
    clientErrorHandler: (error, socket) => answerClientError(error, socket, logger as FastifyBaseLogger),
    // Raised before routing (a malformed percent-escape, a longer path parameter): the envelope too.
    frameworkErrors: (error, request, reply) => {
      const http =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? invalid(`A path parameter is longer than ${MAX_PATH_PARAM_CHARS} characters`)
          : error.code === 'FST_ERR_BAD_URL'
            ? invalid('The URL is not valid: a percent-escape does not decode')
            : internalError();
      request.log.info(
        {
          method: request.method,
          url: loggedUrl(request),
          status: http.statusCode,
          code: http.code,
          reason: http.message,
        },
        'request',
      );
      return answerUnrouted(request, reply.header('x-request-id', request.id), http, [svixDialect]);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  serializersOf.set(app as unknown as FastifyInstance, serializers);
  closesIdleConnectionsWhileClosing(app as unknown as FastifyInstance);

  const ajv = validators();
  app.setValidatorCompiler(({ schema, httpPart }) =>
    lazyValidator(() => (httpPart === 'body' ? ajv.body : ajv.other).compile(schema)),
  );
  installBodyParsers(app, config.maxPayloadBytes);
  installErrorHandling(app, [svixDialect]);
  // A request without a body is treated as an empty object, so optional bodies may be left out and
  // required fields are named in the error ("body must have required property 'app_id'").
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined) request.body = {};
  });
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['params', request.params],
      ['querystring', request.query],
      ['body', request.body],
    ] as const) {
      const field = unstorableField(part, value);
      if (field) throw invalid(`${field} must not contain NUL characters or unpaired surrogates`);
    }
  });
  installTracing(app, tracer);
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: loggedUrl(request),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        trace_id: request.traceId ?? undefined,
        client: request.ip,
      },
      'request',
    );
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  documentCommonErrors(app);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Herald API',
        version: '1.0.0',
        description:
          'Outbound webhooks: messages, applications, endpoints, deliveries, the event catalog and API keys.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'sk_test_… (Test) or sk_live_… (Live)' },
        },
      },
      security: [{ bearer: [] }],
    },
  });
  installAuth(app, store, config);
  installAccess(app, store);
  const redis = await installRateLimits(app, config);
  if (redis) app.addHook('onClose', async () => void redis.disconnect());
  // The reference page at /docs, rendered from the document above (public, not rate limited).
  await docsPage(app);
  // The icon every page links, and /favicon.ico (public).
  favicon(app);
  // GET /: a browser to the console, a client to an index of the service's addresses (public).
  root(app);
  // Requests counted by route and status, and GET /metrics (public, not rate limited).
  installMetrics(app, metrics, config.metricsToken);

  const schemas = new SchemaCompiler(config.schemaCacheBytes, config.schemaCompileDeadlineMs);
  app.addHook('onClose', () => schemas.close());
  metrics.watchSchemas(schemas);
  // Transformations' compile checks and simulations, off the event loop (on threads started on first use).
  const transformations = sharedTransformations?.share() ?? new Transformations(config);
  app.addHook('onClose', () => transformations.close());
  const deps = { store, config, metrics, schemas, tracer, transformations };
  for (const routes of [
    systemRoutes,
    messageRoutes,
    applicationRoutes,
    endpointRoutes,
    operationalEndpointRoutes,
    deliveryRoutes,
    eventTypeRoutes,
    apiKeyRoutes,
    auditLogRoutes,
    backgroundTaskRoutes,
    endpointStatsRoutes,
    applicationStatsRoutes,
    svixRoutes,
    portalRoutes,
    consoleRoutes,
  ]) {
    await app.register(routes, deps);
  }
  return app;
}

export type Api = Awaited<ReturnType<typeof buildApi>>;

/** How often a closing server looks for keep-alive connections that have gone idle. */
const IDLE_SWEEP_MS = 50;

/**
 * Node closes the keep-alive connections that are idle when the server begins to close; one answering a
 * request at that moment stays open after its answer until keepAliveTimeout (65 s), and the close (a
 * deploy's SIGTERM) waits for it. While the server closes, connections that have gone idle are closed as
 * they come, so the close waits only for the answers under way.
 */
function closesIdleConnectionsWhileClosing(app: FastifyInstance): void {
  let sweep: NodeJS.Timeout | null = null;
  app.addHook('preClose', (done) => {
    sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
    sweep.unref();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    if (sweep) clearInterval(sweep);
    done();
  });
}
