import { Type } from 'typebox';
import { scopeOf } from './auth.js';
import { createdWithin, pageOf, type RoutePlugin } from './deps.js';
import { errors } from './schemas/errors.js';
import { CreatedWithin, Filter, ListOf, pageQuery } from './schemas/pagination.js';
import { AuditEntry } from './schemas/audit-log.js';
import { auditEntryToApi, list } from './serialize.js';

export const auditLogRoutes: RoutePlugin = async (app, { store }) => {
  app.get(
    '/api/v1/audit-log',
    {
      schema: {
        summary: "Every change of the environment's configuration, newest first (admin keys only)",
        tags: ['audit-log'],
        querystring: Type.Object({
          ...pageQuery('auditEntry'),
          resource_type: Filter,
          resource_id: Filter,
          action: Filter,
          actor_id: Filter,
          ...CreatedWithin,
        }),
        response: { 200: ListOf(AuditEntry), ...errors(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const { resource_type, resource_id, action, actor_id } = request.query;
      const page = await store.auditLog.list(scopeOf(request), pageOf(request.query), {
        resourceType: resource_type,
        resourceId: resource_id,
        action,
        actorId: actor_id,
        ...createdWithin(request.query),
      });
      return list(page, auditEntryToApi);
    },
  );
};
