import type { TestNetwork } from '../config.js';
import { headersProblem } from './headers.js';
import { endpointUrlProblem } from './urls.js';

// An endpoint's transformation (decisions, "Fourth wave", Transformations): JavaScript that defines
// `handler(webhook)` and returns the request to make instead, run in a sandbox (src/transformations/).
// The rules here are what may be written and what a run may give back.

/** Longest code an endpoint's transformation may hold, in UTF-16 code units (64 KiB of ASCII). */
export const TRANSFORMATION_CODE_LIMIT = 64 * 1024;

/** The methods a transformation may send with. */
export const TRANSFORMATION_METHODS = ['POST', 'PUT', 'PATCH'] as const;
export type TransformationMethod = (typeof TRANSFORMATION_METHODS)[number];

/** An endpoint's transformation as written: code (null: none) and whether it runs. */
export interface TransformationSetting {
  code: string | null;
  enabled: boolean;
}

/** What a transformation's handler receives and returns. */
export interface Webhook {
  method: TransformationMethod;
  url: string;
  headers: Record<string, string>;
  payload: unknown;
  eventType: string;
  cancel: boolean;
}

/** The request a run asks for: what is sent instead of the plain one (or nothing, `cancel`). */
export interface TransformedRequest {
  method: TransformationMethod;
  url: string;
  headers: Record<string, string>;
  /** The body as sent: the returned payload as JSON. */
  body: string;
  cancel: boolean;
}

/**
 * The setting written over the current one: a field left out keeps its value; a new transformation with
 * code and no `enabled` is enabled (code sent is code meant to run).
 */
export function mergedTransformation(
  written: { code?: string | null | undefined; enabled?: boolean | undefined },
  current: TransformationSetting | null,
): TransformationSetting {
  const code = written.code === undefined ? (current?.code ?? null) : written.code;
  const enabled = written.enabled ?? (current ? current.enabled : code !== null);
  return { code, enabled };
}

/** The webhook a handler starts from, as the JSON text the sandbox parses (a Webhook), and its URL. */
export interface StartingWebhook {
  url: string;
  json: string;
}

/**
 * The webhook a handler starts from: the request Herald would send, with no headers of the endpoint's own.
 * `body` is JSON already (the outbound body of a stored payload), so the text is put together around it
 * rather than parsed and written again.
 */
export function startingWebhook(url: string, eventType: string, body: string): StartingWebhook {
  const json = `{"method":"POST","url":${JSON.stringify(url)},"headers":{},"payload":${body},"eventType":${JSON.stringify(eventType)},"cancel":false}`;
  return { url, json };
}

/**
 * What a handler returned, checked: the request to send, or why it cannot be (`bad return value: …`).
 * `returned` is the handler's value as JSON (null: it returned nothing JSON can hold); `maxBodyBytes`
 * bounds the body as HERALD_MAX_PAYLOAD_BYTES bounds a message.
 */
export function transformedRequest(
  returned: string | null,
  maxBodyBytes: number,
): { request: TransformedRequest } | { problem: string } {
  const bad = (why: string) => ({ problem: `bad return value: ${why}` });
  if (returned === null) return bad('handler must return the webhook object');
  let value: unknown;
  try {
    value = JSON.parse(returned);
  } catch {
    return bad('handler must return the webhook object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return bad('handler must return the webhook object');
  const webhook = value as Record<string, unknown>;
  const method = webhook.method ?? 'POST';
  if (typeof method !== 'string' || !(TRANSFORMATION_METHODS as readonly string[]).includes(method.toUpperCase()))
    return bad(`method must be one of ${TRANSFORMATION_METHODS.join(', ')}`);
  if (typeof webhook.url !== 'string' || webhook.url === '') return bad('url must be a string');
  const headers = webhook.headers ?? {};
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers))
    return bad('headers must be an object of strings');
  const problem = headersProblem(headers as Record<string, string>);
  if (problem) return bad(problem);
  if (webhook.cancel !== undefined && typeof webhook.cancel !== 'boolean') return bad('cancel must be a boolean');
  if (webhook.payload === undefined) return bad('payload must be a JSON value');
  const body = JSON.stringify(webhook.payload);
  if (Buffer.byteLength(body) > maxBodyBytes) return bad(`payload is larger than ${maxBodyBytes} bytes`);
  return {
    request: {
      method: method.toUpperCase() as TransformationMethod,
      url: webhook.url,
      headers: headers as Record<string, string>,
      body,
      cancel: webhook.cancel === true,
    },
  };
}

/**
 * Why a URL a handler returned cannot be sent to, for an endpoint of `type`: an HTTP endpoint's is held to its
 * address rules (endpointUrlProblem; names are checked again when connecting); a destination publishes to
 * its own address, which a transformation cannot change. Null when it can be sent to.
 */
export function transformedUrlProblem(
  url: string,
  endpoint: { type: string; livemode: boolean; publicOnly: boolean },
  rules: { ssrfAllow: string[]; testNetwork: TestNetwork },
): string | null {
  if (endpoint.type !== 'http')
    return `url: a ${endpoint.type} endpoint publishes to its own address, which its transformation cannot change`;
  return endpointUrlProblem(url, endpoint.livemode, rules.ssrfAllow, endpoint.publicOnly, rules.testNetwork);
}
