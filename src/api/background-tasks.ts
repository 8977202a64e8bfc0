import { Type } from 'typebox';
import { notFound } from './errors.js';
import { scopeOf } from './auth.js';
import type { RoutePlugin } from './deps.js';
import { IdParams, Timestamp } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { BackgroundTask } from './schemas/background-tasks.js';
import { backgroundTaskToApi } from './serialize.js';
import { startRecovery } from './shared/recovery.js';

// An endpoint's recovery, started here and followed with GET /background-tasks/{id} (src/api/shared/recovery.ts).

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
