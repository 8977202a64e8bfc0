import { STARTER_CATALOG } from '../../domain/catalog.js';
import { Type } from 'typebox';
import { withExample } from '../schemas/common.js';
import { conflict, invalid, notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { ApiDeps, RoutePlugin } from '../deps.js';
import { schemaValidator } from '../shared/schema-validator.js';
import { CatalogName, Description, EventTypeName } from '../schemas/fields.js';
import { EVENT_TYPE_NAME } from '../../domain/catalog.js';
import { schemaFailure } from '../../domain/event-schema.js';
import { EventTypeLimitError } from '../../store/event-types.js';
import type { Scope } from '../../store/index.js';
import { listQuery } from './common.js';
import { svixErrors } from './errors.js';
import { EventTypeOut, eventTypeOut, SvixListOf, svixList } from './models.js';

// The event catalog as Svix's event types. Svix keeps a schema per version (`schemas: {"1": …}`);
// Herald keeps one, the highest version given. The catalog example (what send-example sends) is the
// schema's first `examples` entry that satisfies it, {} when there is none.

const Schemas = Type.Union([Type.Record(Type.String(), Type.Object({}, { additionalProperties: true })), Type.Null()]);
const fields = {
  description: Description,
  archived: Type.Optional(Type.Boolean()),
  deprecated: Type.Optional(Type.Boolean()),
  schemas: Type.Optional(Schemas),
  groupName: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
};
const EventTypeIn = Type.Object({ name: CatalogName, ...fields });
const EventTypeUpdate = Type.Object(fields);
const EventTypePatch = Type.Partial(Type.Object(fields));
const NameParams = Type.Object({ event_type_name: EventTypeName });

interface Fields {
  description?: string | undefined;
  archived?: boolean | undefined;
  deprecated?: boolean | undefined;
  schemas?: Record<string, object> | null | undefined;
  groupName?: string | null | undefined;
}

/** The one schema Herald keeps of Svix's versions (the highest), null for none, undefined when not given. */
function keptSchema(schemas: Fields['schemas']): object | null | undefined {
  if (schemas === undefined) return undefined;
  if (schemas === null) return null;
  const versions = Object.keys(schemas).sort((a, b) => Number(a) - Number(b));
  if (versions.some((v) => !/^[1-9][0-9]{0,3}$/.test(v))) throw invalid('schemas keys are versions: "1", "2", …');
  return versions.length === 0 ? null : schemas[versions[versions.length - 1]!]!;
}

/** The schema, checked as the native catalog checks it, and the example the entry keeps with it. */
async function checkedSchema({ schemas }: Pick<ApiDeps, 'schemas'>, schema: object | null | undefined) {
  if (!schema) return { schema, example: schema === null ? {} : undefined };
  const validate = await schemaValidator(schemas, JSON.stringify(schema));
  const examples = (schema as { examples?: unknown }).examples;
  const fitting = Array.isArray(examples)
    ? examples.find(
        (e) =>
          e !== null &&
          typeof e === 'object' &&
          !Array.isArray(e) &&
          (!validate || schemaFailure(validate, e, 'example', JSON.stringify(e).length) === null),
      )
    : undefined;
  return { schema, example: (fitting as object | undefined) ?? {} };
}

/**
 * The 409 of a create whose name the catalog holds: a new environment's catalog holds the starter types,
 * which a team moving from Svix creates again, so it says so and what to call instead.
 */
function alreadyInCatalog(name: string): string {
  const starter = STARTER_CATALOG.some((entry) => entry.name === name)
    ? ` (a new environment's catalog holds ${STARTER_CATALOG.map((entry) => entry.name).join(', ')})`
    : '';
  return `event type "${name}" already exists${starter}: update it with PUT /api/v1/event-type/${name}, which also creates a missing one`;
}

export const svixEventTypeRoutes: RoutePlugin = async (app, deps) => {
  const { store, config } = deps;
  const tags = ['svix: event type'];

  const create = async (scope: Scope, name: string, body: Fields) => {
    const { schema, example } = await checkedSchema(deps, keptSchema(body.schemas));
    try {
      return await store.eventTypes.create(
        scope,
        {
          name,
          description: body.description,
          schema: schema ?? undefined,
          example,
          archived: body.archived,
          deprecated: body.deprecated,
          groupName: body.groupName,
        },
        config.maxEventTypes,
      );
    } catch (error) {
      if (error instanceof EventTypeLimitError) throw conflict(error.message);
      throw error;
    }
  };

  const update = async (scope: Scope, name: string, body: Fields) => {
    const { schema, example } = await checkedSchema(deps, keptSchema(body.schemas));
    return store.eventTypes.update(scope, name, {
      description: body.description,
      schema,
      example,
      archived: body.archived,
      deprecated: body.deprecated,
      groupName: body.groupName,
    });
  };

  app.get(
    '/api/v1/event-type',
    {
      schema: {
        summary: 'List event types in name order (archived ones with include_archived)',
        tags,
        querystring: Type.Object({
          ...listQuery,
          include_archived: Type.Optional(Type.Boolean()),
          with_content: Type.Optional(Type.Boolean()),
        }),
        response: { 200: SvixListOf(EventTypeOut), ...svixErrors() },
      },
    },
    async (request) => {
      const { query } = request;
      const page = await store.eventTypes.list(
        scopeOf(request),
        { limit: query.limit ?? 50, cursor: query.iterator },
        { archived: query.include_archived === true },
      );
      return svixList(page, (e) => {
        const out = eventTypeOut(e);
        return query.with_content === true ? out : { ...out, schemas: null };
      });
    },
  );

  app.post(
    '/api/v1/event-type',
    {
      schema: {
        summary: 'Create an event type',
        tags,
        body: withExample(EventTypeIn, {
          name: 'invoice.paid',
          description: 'An invoice was paid in full.',
          groupName: 'billing',
          schemas: {
            '1': {
              type: 'object',
              properties: { invoice_id: { type: 'string' }, amount: { type: 'integer' } },
              required: ['invoice_id'],
              examples: [{ invoice_id: 'inv_1001', amount: 4200 }],
            },
          },
        }),
        response: { 201: EventTypeOut, ...svixErrors(409) },
      },
    },
    async (request, reply) => {
      const row = await create(scopeOf(request), request.body.name, request.body);
      if (!row) throw conflict(alreadyInCatalog(request.body.name));
      reply.code(201);
      return eventTypeOut(row);
    },
  );

  app.get(
    '/api/v1/event-type/:event_type_name',
    {
      schema: {
        summary: 'Get an event type',
        tags,
        params: NameParams,
        response: { 200: EventTypeOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const row = await store.eventTypes.get(scopeOf(request), request.params.event_type_name);
      if (!row) throw notFound(`event type ${request.params.event_type_name}`);
      return eventTypeOut(row);
    },
  );

  // PUT creates the event type when there is none of this name.
  app.put(
    '/api/v1/event-type/:event_type_name',
    {
      schema: {
        summary: 'Update an event type, or create it',
        tags,
        params: NameParams,
        body: withExample(EventTypeUpdate, { description: 'An invoice was paid in full.', deprecated: false }),
        response: { 200: EventTypeOut, 201: EventTypeOut, ...svixErrors(409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const name = request.params.event_type_name;
      if (!EVENT_TYPE_NAME.test(name)) throw invalid(`event type name must match ${EVENT_TYPE_NAME.source}`);
      const body = { archived: false, deprecated: false, groupName: null, schemas: null, ...request.body };
      const updated = await update(scope, name, body);
      if (updated) return eventTypeOut(updated);
      const created = await create(scope, name, body);
      if (!created) throw conflict(`event type "${name}" was created meanwhile; send the update again`);
      reply.code(201);
      return eventTypeOut(created);
    },
  );

  app.patch(
    '/api/v1/event-type/:event_type_name',
    {
      schema: {
        summary: 'Change some fields of an event type',
        tags,
        params: NameParams,
        body: withExample(EventTypePatch, { archived: true }),
        response: { 200: EventTypeOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const row = await update(scopeOf(request), request.params.event_type_name, request.body);
      if (!row) throw notFound(`event type ${request.params.event_type_name}`);
      return eventTypeOut(row);
    },
  );

  // Deleting archives (messages of it are still accepted); `expunge=true` removes it for good.
  app.delete(
    '/api/v1/event-type/:event_type_name',
    {
      schema: {
        summary: 'Archive an event type (expunge=true: delete it)',
        tags,
        params: NameParams,
        querystring: Type.Object({ expunge: Type.Optional(Type.Boolean()) }),
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const name = request.params.event_type_name;
      const done = request.query.expunge
        ? await store.eventTypes.delete(scope, name)
        : (await store.eventTypes.update(scope, name, { archived: true })) !== undefined;
      if (!done) throw notFound(`event type ${name}`);
      reply.code(204);
      return null;
    },
  );
};
