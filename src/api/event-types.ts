import { Type } from 'typebox';
import { conflict, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { pageOf, type RoutePlugin } from './deps.js';
import { errors, EventType, ListOf } from './schemas.js';
import { eventTypeToApi, list } from './serialize.js';
import { EVENT_TYPE_NAME } from '../domain/catalog.js';

const Name = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: EVENT_TYPE_NAME.source,
  description: 'Dotted name such as invoice.paid',
});
const Description = Type.String({ maxLength: 1024 });
const Example = Type.Object({}, { additionalProperties: true, description: 'Sample payload, used by send-test' });

export const eventTypeRoutes: RoutePlugin = async (app, { store }) => {
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
        body: Type.Object({
          name: Name,
          description: Type.Optional(Description),
          example_json: Type.Optional(Example),
        }),
        response: { 201: EventType, ...errors(400, 401, 409, 429) },
      },
    },
    async (request, reply) => {
      const { name, description, example_json } = request.body;
      const row = await store.eventTypes.create(scopeOf(request), { name, description, example: example_json });
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
        summary: 'Update a catalog entry; a new example bumps its version',
        tags: ['event-types'],
        params: Type.Object({ name: Type.String({ maxLength: 255 }) }),
        body: Type.Object({ description: Type.Optional(Description), example_json: Type.Optional(Example) }),
        response: { 200: EventType, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.eventTypes.update(scopeOf(request), request.params.name, {
        description: request.body.description,
        example: request.body.example_json,
      });
      if (!row) throw notFound(`event type ${request.params.name}`);
      return eventTypeToApi(row);
    },
  );
};
