import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type TObject, Type } from 'typebox';
import { classify, FieldError, type HttpError } from '../errors.js';

// Errors as Svix answers them, so its SDKs raise ApiException with the same `code` and body: {code,
// detail} for most statuses, and for a request that does not validate 422 with `detail` a list of
// {loc, msg, type}. Routes throw the same HttpError as the native API; only the envelope differs.

/** Svix's codes for the statuses Herald answers with. */
const CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'authentication_failed',
  403: 'forbidden',
  404: 'not_found',
  408: 'request_timeout',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  500: 'internal_server_error',
  503: 'service_unavailable',
};

export const SvixError = Type.Object(
  { code: Type.String(), detail: Type.String() },
  { description: 'An error, as Svix answers it' },
);
const ValidationItem = Type.Object({ loc: Type.Array(Type.String()), msg: Type.String(), type: Type.String() });

/** What each status means on this surface, with an example answer (the OpenAPI document shows them). */
const MEANINGS: Record<number, { description: string; detail: string }> = {
  400: { description: 'The request cannot be read', detail: 'The URL is not valid: a percent-escape does not decode' },
  401: { description: 'The API key is missing, malformed, unknown or revoked', detail: 'Invalid or revoked API key' },
  404: { description: "Not found in the key's organization and environment", detail: 'application app_1 not found' },
  409: {
    description: 'Conflicts with what exists (a uid or name taken, a key in use, a limit reached)',
    detail: 'an application with uid "acme" already exists',
  },
  413: {
    description: 'The body is larger than HERALD_MAX_PAYLOAD_BYTES',
    detail: 'Request body is larger than the maximum allowed size',
  },
  415: { description: 'The body is not JSON in UTF-8', detail: 'Content-Type must be application/json' },
  429: {
    description: "Over the organization's rate limit; retry after Retry-After seconds",
    detail: 'Too many requests',
  },
  503: {
    description: 'The database is unavailable or its disk is full; retry after Retry-After seconds',
    detail: 'The database is unavailable',
  },
};

/** The error responses every Svix-surface route documents, in Svix's shapes, plus `statuses`. */
export function svixErrors(...statuses: number[]) {
  const out: Record<number, TObject> = {
    422: Type.Object(
      { detail: Type.Array(ValidationItem) },
      {
        description: 'The request does not validate: each item names the field (loc) and the rule (msg)',
        examples: [
          { detail: [{ loc: ['body', 'name'], msg: "body must have required property 'name'", type: 'value_error' }] },
        ],
      },
    ),
  };
  for (const status of [400, 401, 413, 415, 429, 503, ...statuses]) {
    const meaning = MEANINGS[status]!;
    out[status] = Type.Object(SvixError.properties, {
      description: meaning.description,
      examples: [{ code: CODES[status], detail: meaning.detail }],
    });
  }
  return out;
}

/** Where a validation failure lies, as Svix's `loc`: the request part, then the path to the field. */
function locationOf(error: FastifyError): string[] {
  const failure = error.validation?.[0];
  const part = error.validationContext === 'querystring' ? 'query' : (error.validationContext ?? 'body');
  const path = (failure?.instancePath ?? '').split('/').filter(Boolean);
  const missing = (failure?.params as { missingProperty?: string } | undefined)?.missingProperty;
  return [part, ...path, ...(missing ? [missing] : [])];
}

/**
 * Answers `error` in Svix's shape. A request a route refuses as invalid (400 with `loc`, where the fault
 * lies: the field a FieldError names, else the body) is Svix's 422 validation error; one refused before routing (`loc` null: a URL that does not
 * decode, no such route) keeps its status.
 */
export function sendSvixError(reply: FastifyReply, error: HttpError, loc: string[] | null = ['body']): FastifyReply {
  const validation = error.statusCode === 400 && loc !== null;
  reply
    .code(validation ? 422 : error.statusCode)
    .headers(error.headers)
    .type('application/json');
  if (validation) return reply.send({ detail: [{ loc, msg: error.message, type: 'value_error' }] });
  return reply.send({ code: CODES[error.statusCode] ?? 'error', detail: error.message });
}

/** Makes every error of the routes registered in `app` (an encapsulated plugin) leave in Svix's shapes. */
export function installSvixErrors(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply) => {
    const http = classify(error);
    if (http.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: http.code, reason: http.message }, 'request rejected');
    const loc = error.validation ? locationOf(error) : http instanceof FieldError ? [...http.loc] : ['body'];
    return sendSvixError(reply, http, loc);
  });
}
