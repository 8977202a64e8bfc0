import { Type } from 'typebox';
import { conflict, invalid, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import type { RoutePlugin } from './deps.js';
import { BackgroundTask, errors, IdParams, Timestamp } from './schemas.js';
import { backgroundTaskToApi } from './serialize.js';

// Recovering an endpoint (decisions: "Recovering an endpoint, background tasks"): every delivery of the
// endpoint that failed or was held while it was disabled, of messages created in a time range, gets one new
// manual attempt, in the background (src/background/runner.ts), followed with GET /background-tasks/{id}.

export const backgroundTaskRoutes: RoutePlugin = async (app, { store }) => {
  app.post(
    '/api/v1/endpoints/:id/recover',
    {
      schema: {
        summary:
          "Give every failed or disabled delivery of the endpoint's messages created in [since, until) a new attempt",
        tags: ['endpoints'],
        params: IdParams,
        body: Type.Object({
          since: Timestamp,
          until: Type.Optional(Timestamp),
        }),
        response: { 202: BackgroundTask, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const since = Date.parse(request.body.since);
      const until = request.body.until === undefined ? null : Date.parse(request.body.until);
      if (Number.isNaN(since) || (until !== null && Number.isNaN(until)))
        throw invalid('since and until must be date-times (RFC 3339)');
      if (until !== null && until <= since) throw invalid('until must be after since');
      const endpoint = await store.endpoints.get(scope, request.params.id);
      if (!endpoint) throw notFound(`endpoint ${request.params.id}`);
      if (endpoint.status === 'disabled')
        throw conflict('the endpoint is disabled: enable it (PATCH status "active") before recovering it');
      const task = await store.backgroundTasks.createRecover(scope, { endpointId: endpoint.id, since, until });
      store.events.emit('background');
      reply.code(202);
      return backgroundTaskToApi(task);
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
