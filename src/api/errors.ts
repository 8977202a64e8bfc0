import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

// Every error leaves the API as {error: {code, message, request_id}}. Routes throw HttpError; everything
// else a request can raise is mapped here, in one place, so no input can produce an unexplained 5xx.

export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'rate_limited'
  | 'test_mode_only'
  | 'service_unavailable'
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
export const notFound = (what: string) => new HttpError(404, 'not_found', `${what} not found`);
export const conflict = (message: string) => new HttpError(409, 'conflict', message);
export const internalError = () => new HttpError(500, 'internal_error', 'Internal error; retry with the same Idempotency-Key');

/** Store failures that mean "the database is away for now" rather than a bug. */
function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  if (!e) return false;
  // Network (the server or its address is gone), PostgreSQL class 08 (connection exception), 57P01-03
  // (shut down / restarting) and 53300 (too many connections): the database is away for now, retry shortly.
  const codes = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300', 'SQLITE_BUSY'];
  if (codes.includes(e.code ?? '') || /^08...$/.test(e.code ?? '')) return true;
  // A deadlock or serialization failure rolled the request's transaction back: trying again succeeds.
  if (e.code === '40P01' || e.code === '40001') return true;
  // 55000 is a broad class; only its refusal of new connections (ALLOW_CONNECTIONS false) means "away".
  if (e.code === '55000' && /not currently accepting connections/.test(e.message ?? '')) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is not queryable|Query read timeout/i.test(e.message ?? '');
}

function classify(error: FastifyError | HttpError | Error): HttpError {
  if (error instanceof HttpError) return error;
  const fe = error as FastifyError;
  if (fe.validation) return invalid(fe.message);
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
  if (isDatabaseUnavailable(error)) {
    return new HttpError(503, 'service_unavailable', 'The database is unavailable or busy; retry shortly', { 'retry-after': '1' });
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

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const http = classify(error);
    if (http.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: http.code, reason: http.message }, 'request rejected');
    return sendError(request, reply, http);
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, new HttpError(404, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`)));
}
