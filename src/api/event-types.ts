import { Type } from 'typebox';
import { conflict, invalid, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { pageOf, type RoutePlugin } from './deps.js';
import { Nullable, described } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { ListOf } from './schemas/pagination.js';
import { CatalogName, Description } from './schemas/fields.js';
import { EventType } from './schemas/event-types.js';
import { eventTypeToApi, list } from './serialize.js';
import { EVENT_TYPE_NAME } from '../domain/catalog.js';
import { MAX_SCHEMA_CHARS, schemaFailure, type PayloadValidator } from '../domain/event-schema.js';
import { schemaValidator } from './shared/schema-validator.js';
import { EventTypeLimitError } from '../store/event-types.js';

const Name = described(CatalogName, 'Dotted name such as invoice.paid');
const Example = Type.Object(
  {},
  { additionalProperties: true, description: 'Sample payload, used by send-test; must satisfy `schema`' },
);
const SchemaField = Type.Object(
  {},
  {
    additionalProperties: true,
    description: `JSON Schema (draft 2020-12) that payloads of this event type must satisfy; at most ${MAX_SCHEMA_CHARS} characters of JSON, references resolved within the schema only`,
  },
);

/** 400 when the example an entry would keep does not satisfy the schema it would keep. */
function requireExampleFits(validate: PayloadValidator | null, example: unknown, defaulted: boolean): void {
  if (!validate) return;
  const failure = schemaFailure(validate, example, 'example_json', JSON.stringify(example).length);
  if (failure)
    throw invalid(
      defaulted ? `${failure}; without example_json the example is {}: send one that satisfies the schema` : failure,
    );
}

export const eventTypeRoutes: RoutePlugin = async (app, { store, config, schemas }) => {
  app.get(
    '/api/v1/event-types',
    {
      schema: {
        summary: "List the environment's event catalog",
        tags: ['event-types'],
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250 })),
          cursor: Type.Optional(
            Type.String({
              maxLength: 255,
              pattern: EVENT_TYPE_NAME.source,
              description: 'next_cursor of the previous page (an event type name)',
            }),
          ),
        }),
        response: { 200: ListOf(EventType), ...errors(400, 401, 429) },
      },
    },
    async (request) => list(await store.eventTypes.list(scopeOf(request), pageOf(request.query)), eventTypeToApi),
  );

  app.post(
    '/api/v1/event-types',
    {
      schema: {
        summary: 'Add an event type to the catalog',
        tags: ['event-types'],
        body: Type.Object(
          {
            name: Name,
            description: Type.Optional(Description),
            example_json: Type.Optional(Example),
            schema: Type.Optional(SchemaField),
          },
          {
            examples: [
              {
                name: 'invoice.paid',
                description: 'An invoice was paid in full.',
                example_json: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd' },
                schema: {
                  type: 'object',
                  properties: {
                    invoice_id: { type: 'string' },
                    amount: { type: 'integer' },
                    currency: { type: 'string' },
                  },
                  required: ['invoice_id', 'amount'],
                },
              },
            ],
          },
        ),
        response: { 201: EventType, ...errors(400, 401, 409, 429) },
      },
    },
    async (request, reply) => {
      const { name, description, example_json, schema } = request.body;
      // The entry's example must satisfy its schema: send-test sends it, and receivers trust the schema.
      if (schema !== undefined)
        requireExampleFits(
          await schemaValidator(schemas, JSON.stringify(schema)),
          example_json ?? {},
          example_json === undefined,
        );
      let row: Awaited<ReturnType<typeof store.eventTypes.create>>;
      try {
        row = await store.eventTypes.create(
          scopeOf(request),
          { name, description, example: example_json, schema },
          config.maxEventTypes,
        );
      } catch (error) {
        if (error instanceof EventTypeLimitError) throw conflict(error.message);
        throw error;
      }
      if (!row) throw conflict(`event type "${name}" already exists`);
      reply.code(201);
      return eventTypeToApi(row);
    },
  );

  app.get(
    '/api/v1/event-types/:name',
    {
      schema: {
        summary: 'Get a catalog entry',
        tags: ['event-types'],
        params: Type.Object({ name: Type.String({ maxLength: 255 }) }),
        response: { 200: EventType, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.eventTypes.get(scopeOf(request), request.params.name);
      if (!row) throw notFound(`event type ${request.params.name}`);
      return eventTypeToApi(row);
    },
  );

  app.patch(
    '/api/v1/event-types/:name',
    {
      schema: {
        summary: 'Update a catalog entry; a new example or schema bumps its version',
        tags: ['event-types'],
        params: Type.Object({ name: Type.String({ maxLength: 255 }) }),
        body: Type.Object(
          {
            description: Type.Optional(Description),
            example_json: Type.Optional(Example),
            schema: Type.Optional(Nullable(SchemaField)),
          },
          {
            examples: [
              {
                description: 'An invoice was paid in full, possibly in several payments.',
                example_json: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd', payments: 2 },
              },
            ],
          },
        ),
        response: { 200: EventType, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { description, example_json, schema } = request.body;
      // The schema the entry would keep, compiled before the update's transaction: a new one, or (for a
      // new example) the stored one, which the transaction then finds unchanged.
      const keptJson =
        schema !== undefined
          ? schema && JSON.stringify(schema)
          : example_json === undefined
            ? null
            : ((await store.eventTypes.get(scope, request.params.name))?.schema_json ?? null);
      const validate = keptJson
        ? await schemaValidator(schemas, keptJson, schema === undefined ? request.params.name : undefined)
        : null;
      // Checked against the entry as it would be written, so a new example meets the kept schema and a
      // new schema the kept example.
      const row = await store.eventTypes.update(
        scope,
        request.params.name,
        { description, example: example_json, schema },
        (next) => {
          if (schema === undefined && example_json !== undefined && next.schema_json !== keptJson)
            throw conflict(`the schema of event type ${request.params.name} changed meanwhile; send the update again`);
          requireExampleFits(validate, JSON.parse(next.example_json), false);
        },
      );
      if (!row) throw notFound(`event type ${request.params.name}`);
      return eventTypeToApi(row);
    },
  );
};
