import { conflict, invalid } from '../errors.js';
import { endpointUrlProblem, hostProblem } from '../../domain/urls.js';
import {
  type CheckedDestination,
  checkedDestination,
  type DestinationSecrets,
  type DestinationType,
  destinationHosts,
  type EndpointType,
  shownConfig,
  shownUrl,
} from '../../domain/destinations.js';
import { headersProblem, sensitiveHeadersProblem } from '../../domain/headers.js';
import { checkedTls, type TlsInput, type TlsSettings } from '../../domain/pem.js';
import { type AuthInput, checkedAuth } from '../../domain/endpoint-auth.js';
import { filterProblem } from '../../domain/content-filter.js';
import { retryScheduleProblem } from '../../domain/retry-schedule.js';
import { type CircuitInput, circuitProblem } from '../../domain/circuit.js';
import type { Scope, Store } from '../../store/index.js';
import {
  type EndpointAuth,
  EndpointLimitError,
  EndpointUidTakenError,
  transformationOf,
} from '../../store/endpoints.js';
import type { EndpointRow } from '../../store/schema.js';
import type { Config } from '../../config.js';
import { mergedTransformation, type TransformationSetting } from '../../domain/transformations.js';
import type { Transformations } from '../../transformations/index.js';

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
    retry_schedule?: string[] | null | undefined;
    circuit?: CircuitInput | null | undefined;
    /** The endpoint's type: a destination's URL is checked by destinationSettings instead. */
    type?: EndpointType | undefined;
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
  if (input.circuit != null) {
    const problem = circuitProblem(input.circuit, config.circuit);
    if (problem) throw invalid(problem);
  }
  if (input.retry_schedule != null) {
    const problem = retryScheduleProblem(input.retry_schedule);
    if (problem) throw invalid(problem);
  }
  if (input.url !== undefined && (input.type ?? 'http') === 'http') {
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
 * An endpoint's destination as given on create or update, checked (400 naming the field) and ready to
 * store; undefined for an HTTP endpoint, or an update that changes neither `url` nor `config`. The type
 * is fixed at creation. On update, what is not given is the stored one: `config` given replaces the whole
 * config, and a secret (or the URL's password) sent back as "<redacted>" keeps the stored one. Every host
 * the destination connects to is judged as an endpoint URL's host is (hostProblem).
 */
export function destinationSettings(
  store: Store,
  config: Config,
  scope: Scope,
  input: {
    type?: EndpointType | undefined;
    url?: string | undefined;
    config?: object | null | undefined;
    tls?: unknown;
    auth?: unknown;
  },
  current: EndpointRow | undefined,
  publicOnly = scope.livemode,
): { type: DestinationType; checked: CheckedDestination } | undefined {
  if (current && input.type !== undefined && input.type !== current.type)
    throw invalid('type is fixed at creation: create a new endpoint of the other type');
  const type = current?.type ?? input.type ?? 'http';
  if (type === 'http') {
    if (input.config != null) throw invalid("config is for destinations only: this endpoint's type is http");
    return undefined;
  }
  if (input.tls != null || input.auth != null)
    throw invalid(`tls and auth are for http endpoints: a ${type} endpoint's credentials go in its url or config`);
  if (current && input.url === undefined && input.config === undefined) return undefined;
  const stored = current ? store.endpoints.destinationOf(current) : null;
  let secrets: DestinationSecrets = {};
  try {
    if (current) secrets = store.endpoints.destinationSecrets(current);
  } catch {
    // Sealed under another HERALD_SECRET_KEY: a "<redacted>" given back then has nothing to keep.
  }
  const url = input.url ?? shownUrl(current!.url, stored?.sealed.includes('password') ?? false);
  const given =
    (input.config as Record<string, unknown> | null | undefined) ??
    (stored ? shownConfig(type, stored.settings, stored.sealed) : undefined);
  const checked = checkedDestination(
    type,
    url,
    given ?? undefined,
    current && stored ? { url: current.url, settings: stored.settings, secrets } : null,
  );
  if (typeof checked === 'string') throw invalid(checked);
  for (const { host, field } of destinationHosts(type, checked.url, checked.settings)) {
    const problem = hostProblem(host, field, scope.livemode, config.ssrfAllow, publicOnly, config.testNetwork);
    if (problem) throw invalid(problem);
  }
  return { type, checked };
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

/**
 * The transformation a create or an update writes (undefined: none given), merged over the current one
 * (mergedTransformation; its shape is the route's schema's) and checked: its code must compile and define
 * `handler` (400 naming what is wrong). The check takes a turn in the sandbox as `group`: the endpoint, or
 * for a new one its organization.
 */
export async function transformationSetting(
  transformations: Transformations,
  written: { code?: string | null | undefined; enabled?: boolean | undefined } | null | undefined,
  current: EndpointRow | undefined,
  group: string,
): Promise<TransformationSetting | null | undefined> {
  if (written === undefined) return undefined;
  if (written === null) return null;
  const merged = mergedTransformation(written, current ? transformationOf(current) : null);
  if (merged.code !== null) {
    const codeProblem = await transformations.codeProblem(group, merged.code);
    if (codeProblem) throw invalid(`transformation.code does not compile: ${codeProblem}`);
  }
  return merged;
}
