import { Type } from 'typebox';
import { EXAMPLE_ID } from './common.js';

// The error envelope every native route answers a failure with, and what each status means there.

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    request_id: Type.Optional(Type.String()),
  }),
});

/** What each error status means, with an example answer, as the OpenAPI document shows them. */
const ERROR_STATUSES: Record<number, { description: string; code: string; message: string }> = {
  400: {
    description: 'The request is not valid; the message names the field and the rule',
    code: 'invalid_request',
    message: "body must have required property 'app_id'",
  },
  401: {
    description: 'The API key is missing, malformed, unknown or revoked',
    code: 'unauthorized',
    message: 'Invalid or revoked API key',
  },
  403: {
    description: 'The key may not do this (send-test with a Live key)',
    code: 'test_mode_only',
    message: 'send-test is only available with a Test key (sk_test_)',
  },
  404: {
    description: "Not found in the key's organization and environment",
    code: 'not_found',
    message: `application ${EXAMPLE_ID.app} not found`,
  },
  409: {
    description: 'Conflicts with what exists (a duplicate uid or name, a limit reached)',
    code: 'conflict',
    message: 'an application with uid "acme" already exists',
  },
  410: {
    description:
      'The message exists but its payload is gone: expunged, past its own retention, or purged after HERALD_RETENTION',
    code: 'payload_gone',
    message: `the payload of message ${EXAMPLE_ID.message} is no longer stored`,
  },
  413: {
    description: 'The body is larger than HERALD_MAX_PAYLOAD_BYTES',
    code: 'payload_too_large',
    message: 'Request body is larger than the maximum allowed size',
  },
  415: {
    description: 'The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding)',
    code: 'invalid_request',
    message: 'Content-Type must be application/json',
  },
  429: {
    description: "Over the organization's rate limit; retry after Retry-After seconds",
    code: 'rate_limited',
    message: 'Too many requests',
  },
  503: {
    description:
      'The database is unavailable (service_unavailable) or its disk is full (storage_full); nothing was saved, retry after Retry-After seconds',
    code: 'service_unavailable',
    message: 'The database is unavailable',
  },
};

/** Error responses a route documents: each the envelope, with what the status means and an example. */
export function errors(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  return Object.fromEntries(
    statuses.map((status) => {
      const meaning = ERROR_STATUSES[status];
      if (!meaning) return [status, ErrorEnvelope];
      const example = {
        error: { code: meaning.code, message: meaning.message, request_id: 'req_01jd5x3k8m2n4p6q8r0s2t4v6w' },
      };
      return [status, Type.Object(ErrorEnvelope.properties, { description: meaning.description, examples: [example] })];
    }),
  );
}
