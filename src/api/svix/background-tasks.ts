import { Type } from 'typebox';
import { notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { BACKGROUND_TASK_KINDS, BACKGROUND_TASK_STATUSES } from '../../domain/states.js';
import { listQuery, orderQuery, pageOf } from './common.js';
import { svixErrors } from './errors.js';
import { BackgroundTaskOut, backgroundTaskOut, SvixListOf, svixList, svixTaskName } from './models.js';

const oneOf = (names: readonly string[]) => Type.Union(names.map((name) => Type.Literal(name)));

export const svixBackgroundTaskRoutes: RoutePlugin = async (app, { store }) => {
  const tags = ['svix: background task'];
  app.get(
    '/api/v1/background-task',
    {
      schema: {
        summary: 'List background tasks, newest first',
        tags,
        querystring: Type.Object({
          ...listQuery,
          ...orderQuery,
          status: Type.Optional(oneOf(BACKGROUND_TASK_STATUSES.filter((status) => status !== 'cancelled'))),
          task: Type.Optional(oneOf(BACKGROUND_TASK_KINDS.map(svixTaskName))),
        }),
        response: { 200: SvixListOf(BackgroundTaskOut), ...svixErrors() },
      },
    },
    async (request) => {
      const { query } = request;
      const page = await store.backgroundTasks.list(scopeOf(request), pageOf(query, 'desc'), {
        status: query.status as (typeof BACKGROUND_TASK_STATUSES)[number] | undefined,
        kind: BACKGROUND_TASK_KINDS.find((kind) => svixTaskName(kind) === query.task),
      });
      return svixList(page, backgroundTaskOut);
    },
  );

  app.get(
    '/api/v1/background-task/:task_id',
    {
      schema: {
        summary: 'Get a background task',
        tags,
        params: Type.Object({ task_id: Type.String({ minLength: 1, maxLength: 256 }) }),
        response: { 200: BackgroundTaskOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const task = await store.backgroundTasks.get(scopeOf(request), request.params.task_id);
      if (!task) throw notFound(`background task ${request.params.task_id}`);
      return backgroundTaskOut(task);
    },
  );

  // Svix's health answers 204 while the service can serve; Herald's store check is GET /healthz.
  app.get(
    '/api/v1/health',
    {
      config: { public: true },
      schema: { summary: 'Whether the service is up', tags: ['svix: health'], response: { 204: Type.Null() } },
    },
    async (_request, reply) => {
      reply.code(204);
      return null;
    },
  );
};
