import { Type } from 'typebox';
import { conflict, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import type { RoutePlugin } from './deps.js';
import { IdParams, literals, Timestamp } from './schemas/common.js';
import { EventTypeName } from './schemas/fields.js';
import { errors } from './schemas/errors.js';
import { BackgroundTask } from './schemas/background-tasks.js';
import { backgroundTaskToApi } from './serialize.js';
import { startRecovery } from './shared/recovery.js';
import { startBulkReplay } from './shared/bulk-replay.js';

// An endpoint's recovery and bulk replay, started here, followed with GET /background-tasks/{id} and stopped
// with its cancel (src/api/shared/recovery.ts, bulk-replay.ts).

export const backgroundTaskRoutes: RoutePlugin = async (app, { store }) => {
  app.post(
    '/api/v1/endpoints/:id/recover',
    {
      schema: {
        summary:
          "Give every failed or disabled delivery of the endpoint's messages created in [since, until) a new attempt",
        tags: ['endpoints'],
        params: IdParams,
        body: Type.Object(
          {
            since: Timestamp,
            until: Type.Optional(Timestamp),
          },
          { examples: [{ since: '2026-01-01T00:00:00.000Z', until: '2026-01-01T06:00:00.000Z' }] },
        ),
        response: { 202: BackgroundTask, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const endpoint = await store.endpoints.get(scope, request.params.id);
      if (!endpoint) throw notFound(`endpoint ${request.params.id}`);
      reply.code(202);
      return backgroundTaskToApi(await startRecovery(store, scope, endpoint, request.body));
    },
  );

  app.post(
    '/api/v1/endpoints/:id/bulk-replay',
    {
      schema: {
        summary:
          "Give each of the endpoint's deliveries of messages created in [since, until) that match the filters one new attempt, in the background",
        tags: ['endpoints'],
        params: IdParams,
        body: Type.Object(
          {
            since: Timestamp,
            until: Type.Optional(Timestamp),
            event_types: Type.Optional(Type.Array(EventTypeName, { minItems: 1, maxItems: 100 })),
            status: Type.Optional(literals(['success', 'failed', 'disabled'] as const)),
            status_code_class: Type.Optional(literals(['1xx', '2xx', '3xx', '4xx', '5xx', 'none'] as const)),
            channel: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
            tag: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
          },
          {
            examples: [
              { since: '2026-01-01T00:00:00.000Z', until: '2026-01-01T06:00:00.000Z', status_code_class: '5xx' },
            ],
          },
        ),
        response: { 202: BackgroundTask, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const endpoint = await store.endpoints.get(scope, request.params.id);
      if (!endpoint) throw notFound(`endpoint ${request.params.id}`);
      const { body } = request;
      const task = await startBulkReplay(store, scope, endpoint, {
        since: body.since,
        until: body.until,
        eventTypes: body.event_types,
        status: body.status,
        statusCodeClass: body.status_code_class,
        channel: body.channel,
        tag: body.tag,
      });
      reply.code(202);
      return backgroundTaskToApi(task);
    },
  );

  app.post(
    '/api/v1/background-tasks/:id/cancel',
    {
      schema: {
        summary: 'Cancel a running background task: no batch starts after this',
        tags: ['background-tasks'],
        params: IdParams,
        response: { 200: BackgroundTask, ...errors(401, 404, 409, 429) },
      },
    },
    async (request) => {
      const found = await store.backgroundTasks.cancel(scopeOf(request), request.params.id);
      if (!found) throw notFound(`background task ${request.params.id}`);
      if (!found.cancelled) throw conflict(`the task is ${found.task.status}, not running: nothing to cancel`);
      return backgroundTaskToApi(found.task);
    },
  );

  app.get(
    '/api/v1/background-tasks/:id',
    {
      schema: {
        summary: 'Get a background task and its progress',
        tags: ['background-tasks'],
        params: IdParams,
        response: { 200: BackgroundTask, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const task = await store.backgroundTasks.get(scopeOf(request), request.params.id);
      if (!task) throw notFound(`background task ${request.params.id}`);
      return backgroundTaskToApi(task);
    },
  );
};
