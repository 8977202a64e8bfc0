import { Type } from 'typebox';
import { invalid, notFound } from '../errors.js';
import { checkEndpointInput, uidChecked } from '../shared/endpoint-input.js';
import { ChannelName, Description, EventTypeNames } from '../schemas/fields.js';
import type { Scope, Store } from '../../store/index.js';
import type { EndpointRow } from '../../store/schema.js';
import { ID_PREFIX } from '../../domain/ids.js';
import { suppliedSecretProblem } from '../../domain/secrets.js';
import type { Config } from '../../config.js';
import { Metadata, Uid } from './fields.js';

// An endpoint as Svix's bodies give it (an application's and an operational one): the fields, their
// checks (the native surface's and what only Svix's bodies carry), and how they are written.

/** The fields an endpoint's create, update and patch bodies share (all optional; `url` is each body's own). */
export const optional = {
  description: Type.Optional(Description),
  disabled: Type.Optional(Type.Boolean()),
  filterTypes: Type.Optional(Type.Union([EventTypeNames, Type.Null()])),
  channels: Type.Optional(
    Type.Union([Type.Array(ChannelName, { minItems: 1, maxItems: 10, uniqueItems: true }), Type.Null()]),
  ),
  metadata: Type.Optional(Metadata),
  rateLimit: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()])),
  uid: Type.Optional(Type.Union([Uid, Type.Null()])),
  version: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  /** A Herald extension: a content filter (docs/api.md, "Content filters"). */
  filter: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
};

export interface Fields {
  url?: string | undefined;
  description?: string | undefined;
  disabled?: boolean | undefined;
  filterTypes?: string[] | null | undefined;
  channels?: string[] | null | undefined;
  filter?: object | null | undefined;
  metadata?: Record<string, string> | undefined;
  rateLimit?: number | null | undefined;
  uid?: string | null | undefined;
  secret?: string | null | undefined;
  headers?: Record<string, string> | null | undefined;
}

/**
 * Checks what Herald checks on the native surface, plus what only Svix's bodies carry. `eventTypes`:
 * what filterTypes may name (the catalog's, unless given).
 */
export async function checked(
  store: Store,
  config: Config,
  scope: Scope,
  body: Fields,
  eventTypes?: readonly string[],
): Promise<void> {
  if (body.uid?.startsWith(ID_PREFIX.endpoint))
    throw invalid(`uid must not start with ${ID_PREFIX.endpoint}: it would read as an endpoint id`);
  if (body.secret != null) {
    const problem = suppliedSecretProblem(body.secret);
    if (problem) throw invalid(problem);
  }
  const unknown = eventTypes && (body.filterTypes ?? []).filter((name) => !eventTypes.includes(name));
  if (unknown && unknown.length > 0) throw invalid(`filterTypes must be among: ${eventTypes!.join(', ')}`);
  await checkEndpointInput(store, config, scope, {
    url: body.url,
    event_types: eventTypes ? undefined : (body.filterTypes ?? undefined),
    headers: body.headers ?? undefined,
    filter: body.filter,
  });
}

/**
 * A PUT's fields: every one left out takes its default (no description, every event type, no channels or
 * filter, no limit, enabled, no metadata), but uid, which stays unless given (the path may name it).
 */
export function replacing(body: Fields & { url: string }): Fields {
  return {
    url: body.url,
    description: body.description ?? '',
    disabled: body.disabled ?? false,
    filterTypes: body.filterTypes ?? null,
    metadata: body.metadata ?? {},
    channels: body.channels ?? null,
    filter: body.filter ?? null,
    rateLimit: body.rateLimit ?? null,
    uid: body.uid,
  };
}

/** Writes Svix's fields onto an endpoint; a field left out stays as it is. Signed with svix-* names from now. */
export async function update(store: Store, scope: Scope, endpoint: EndpointRow, body: Fields, graceMs: number) {
  const operational = endpoint.operational === 1;
  const row = await uidChecked(() =>
    store.endpoints.update(
      scope,
      endpoint.id,
      {
        url: body.url,
        description: body.description,
        eventTypes: body.filterTypes === undefined ? undefined : (body.filterTypes ?? []),
        status: body.disabled === undefined ? undefined : body.disabled ? 'disabled' : 'active',
        rateLimit: body.rateLimit,
        uid: body.uid,
        channels: body.channels,
        filter: body.filter,
        metadata: body.metadata,
        svixHeaders: true,
      },
      operational,
    ),
  );
  if (!row) throw notFound(`endpoint ${endpoint.id}`);
  if (body.secret != null) await store.endpoints.rotateSecret(scope, row.id, graceMs, body.secret, operational);
  return row;
}
