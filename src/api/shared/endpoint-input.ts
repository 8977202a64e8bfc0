import { conflict, invalid } from '../errors.js';
import { endpointUrlProblem } from '../../domain/urls.js';
import { headersProblem, sensitiveHeadersProblem } from '../../domain/headers.js';
import { checkedTls, type TlsInput, type TlsSettings } from '../../domain/pem.js';
import { type AuthInput, checkedAuth } from '../../domain/endpoint-auth.js';
import { filterProblem } from '../../domain/content-filter.js';
import type { Scope, Store } from '../../store/index.js';
import { type EndpointAuth, EndpointLimitError, EndpointUidTakenError } from '../../store/endpoints.js';
import type { EndpointRow } from '../../store/schema.js';
import type { Config } from '../../config.js';

// What every surface that writes endpoints (the native API, its operational endpoints, the Svix-compatible
// surface, the portal) checks before a write, and how it creates one: the same rules, answered with the
// same 400 and 409 errors wherever the endpoint comes from.

/**
 * Checks the URL and the subscribed event types against the rules of the caller's environment;
 * `publicOnly` for a URL a portal customer chose (endpointUrlProblem).
 */
export async function checkEndpointInput(
  store: Store,
  config: Config,
  scope: Scope,
  input: {
    url?: string | undefined;
    event_types?: string[] | undefined;
    headers?: Record<string, string> | undefined;
    sensitive_headers?: string[] | undefined;
    filter?: object | null | undefined;
  },
  publicOnly = scope.livemode,
) {
  if (input.headers !== undefined) {
    const problem = headersProblem(input.headers);
    if (problem) throw invalid(problem);
  }
  if (input.sensitive_headers !== undefined) {
    const problem = sensitiveHeadersProblem(input.sensitive_headers);
    if (problem) throw invalid(problem);
  }
  if (input.filter != null) {
    const problem = filterProblem(input.filter);
    if (problem) throw invalid(problem);
  }
  if (input.url !== undefined) {
    const problem = endpointUrlProblem(input.url, scope.livemode, config.ssrfAllow, publicOnly, config.testNetwork);
    if (problem) throw invalid(problem);
  }
  if (input.event_types && input.event_types.length > 0) {
    const unknown = await store.eventTypes.unknownNames(scope, input.event_types);
    if (unknown.length > 0) throw invalid(`event_types not in this environment's event catalog: ${unknown.join(', ')}`);
  }
}

/**
 * An endpoint's `tls` and `auth` as given on create or update, checked (400 naming the field) and ready to
 * store: undefined when not given, null to remove. A client key or secret sent back as "<redacted>"
 * stands for the one `current` keeps. The token URL is judged as the endpoint URL is (endpointUrlProblem).
 */
export function enterpriseSettings(
  store: Store,
  config: Config,
  scope: Scope,
  input: { tls?: TlsInput | null | undefined; auth?: AuthInput | null | undefined },
  current: EndpointRow | undefined,
  publicOnly = scope.livemode,
): { tls?: TlsSettings | null; auth?: EndpointAuth | null } {
  const settings: { tls?: TlsSettings | null; auth?: EndpointAuth | null } = {};
  if (input.tls !== undefined) {
    if (input.tls === null) settings.tls = null;
    else {
      const checked = checkedTls(input.tls, current ? store.endpoints.tlsKey(current) : null);
      if (typeof checked === 'string') throw invalid(checked);
      settings.tls = checked;
    }
  }
  if (input.auth !== undefined) {
    if (input.auth === null) settings.auth = null;
    else {
      const checked = checkedAuth(
        input.auth,
        (url) => endpointUrlProblem(url, scope.livemode, config.ssrfAllow, publicOnly, config.testNetwork),
        current ? store.endpoints.authSecret(current) : null,
      );
      if (typeof checked === 'string') throw invalid(checked);
      settings.auth = checked;
    }
  }
  return settings;
}

/**
 * Creates an endpoint within HERALD_MAX_ENDPOINTS_PER_APP: one more is 409 `conflict` naming the limit,
 * and so is a uid its application has already.
 */
export async function createEndpoint(
  store: Store,
  config: Config,
  scope: Scope,
  input: Parameters<Store['endpoints']['create']>[1],
): Promise<{ row: EndpointRow; secret: string }> {
  try {
    return await uidChecked(() => store.endpoints.create(scope, input, config.maxEndpointsPerApp));
  } catch (error) {
    if (error instanceof EndpointLimitError) throw conflict(error.message);
    throw error;
  }
}

/** Runs an endpoint write and turns a uid its application has already into 409 `conflict`. */
export async function uidChecked<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof EndpointUidTakenError) throw conflict(error.message);
    throw error;
  }
}
