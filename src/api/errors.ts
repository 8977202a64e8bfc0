import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { newId } from '../domain/ids.js';
import { storeErrorKind } from '../store/errors.js';

// Every error leaves the API as {error: {code, message, request_id}}. Routes throw HttpError; everything
// else a request can raise is mapped here, in one place, so no input can produce an unexplained 5xx.

export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_gone'
  | 'payload_too_large'
  | 'rate_limited'
  | 'request_timeout'
  | 'test_mode_only'
  | 'service_unavailable'
  | 'storage_full'
  | 'internal_error';

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const invalid = (message: string) => new HttpError(400, 'invalid_request', message);

/** A 400 `invalid_request` about one field: `loc` is where it lies (the request part, then the field). */
export class FieldError extends HttpError {
  constructor(
    readonly loc: readonly string[],
    message: string,
  ) {
    super(400, 'invalid_request', message);
  }
}

export const invalidField = (loc: readonly string[], message: string) => new FieldError(loc, message);
export const notFound = (what: string) => new HttpError(404, 'not_found', `${what} not found`);
export const conflict = (message: string) => new HttpError(409, 'conflict', message);
export const internalError = () =>
  new HttpError(500, 'internal_error', 'Internal error; retry with the same Idempotency-Key');

/**
 * A validation failure in words. A field limited to a few values (a union of constants) failed each of
 * them, and ajv names none ("must be equal to constant" once per value): those values are listed instead.
 */
function validationMessage(error: FastifyError): string {
  const failures = error.validation ?? [];
  const choice = failures.find((failure) => failure.keyword === 'anyOf');
  const allowed = failures
    .filter((failure) => failure.keyword === 'const')
    .map((failure) => (failure.params as { allowedValue?: unknown }).allowedValue);
  if (choice && allowed.length === failures.length - 1) {
    return `${error.validationContext ?? ''}${choice.instancePath} must be one of: ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
  }
  return error.message;
}

export function classify(error: FastifyError | HttpError | Error): HttpError {
  if (error instanceof HttpError) return error;
  const fe = error as FastifyError;
  if (fe.validation) return invalid(validationMessage(fe));
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalid(fe.message);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(413, 'payload_too_large', 'Request body is larger than the maximum allowed size');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, 'invalid_request', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return invalid('Content-Length does not match the body');
  }
  const kind = storeErrorKind(error);
  if (kind === 'full') {
    return new HttpError(503, 'storage_full', "The store's disk is full; nothing was saved, retry later", {
      'retry-after': '5',
    });
  }
  if (kind === 'unavailable') {
    return new HttpError(503, 'service_unavailable', 'The database is unavailable or busy; retry shortly', {
      'retry-after': '1',
    });
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) return invalid(fe.message);
  return internalError();
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: HttpError): FastifyReply {
  return reply
    .code(error.statusCode)
    .headers(error.headers)
    .type('application/json')
    .send({ error: { code: error.code, message: error.message, request_id: request.id } });
}

/**
 * Answers a request Node's HTTP parser refused before fastify saw it (bytes that are not HTTP, a header
 * with control characters, a body longer than its Content-Length, an unknown method, headers too large,
 * a request too slow to arrive) with the envelope every other error has, and logs it with its request_id.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex, log: FastifyBaseLogger): void {
  // A reset connection has no one to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const http =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new HttpError(408, 'request_timeout', 'The request did not arrive in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new HttpError(431, 'invalid_request', 'Request headers are too large')
        : invalid('The request is not valid HTTP/1.1 (method, header or body framing)');
  const requestId = newId('request');
  log.info({ request_id: requestId, status: http.statusCode, code: http.code, reason: error.code }, 'request');
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error: { code: http.code, message: http.message, request_id: requestId } });
  socket.end(
    `HTTP/1.1 ${http.statusCode} ${STATUS_CODES[http.statusCode]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    // Closed outright once written: the server allows half-open sockets, and a client that never closes
    // its side would hold this one.
    () => socket.destroy(),
  );
}

/** Another surface's error shape, for the URLs it owns (the Svix-compatible surface: src/api/svix/). */
export interface ErrorDialect {
  owns(url: string): boolean;
  send(reply: FastifyReply, error: HttpError): FastifyReply;
}

/** Answers an error raised before any route ran, in the shape of the surface the path belongs to. */
export function answerUnrouted(
  request: FastifyRequest,
  reply: FastifyReply,
  error: HttpError,
  dialects: readonly ErrorDialect[],
): FastifyReply {
  const dialect = dialects.find((d) => d.owns(request.url.split('?')[0]!));
  return dialect ? dialect.send(reply, error) : sendError(request, reply, error);
}

export function installErrorHandling(app: FastifyInstance, dialects: readonly ErrorDialect[] = []): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const http = classify(error);
    if (http.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: http.code, reason: http.message }, 'request rejected');
    return sendError(request, reply, http);
  });
  app.setNotFoundHandler((request, reply) =>
    answerUnrouted(
      request,
      reply,
      new HttpError(404, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`),
      dialects,
    ),
  );
}
