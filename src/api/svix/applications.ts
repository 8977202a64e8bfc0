import { Type } from 'typebox';
import { meaning, withExample } from '../schemas/common.js';
import { notFound } from '../errors.js';
import { keyAppsOf, scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { ID_PREFIX } from '../../domain/ids.js';
import { AppParams, appOf, listQuery, orderQuery, pageOf } from './common.js';
import { ApplicationIn, checked, createApplication, uidChecked } from './application-input.js';
import { svixErrors } from './errors.js';
import { ApplicationOut, applicationOut, SvixListOf, svixList } from './models.js';

const ApplicationPatch = Type.Partial(ApplicationIn);

export const svixApplicationRoutes: RoutePlugin = async (app, { store }) => {
  const tags = ['svix: application'];
  app.get(
    '/api/v1/app',
    {
      schema: {
        summary: 'List applications',
        tags,
        querystring: Type.Object({ ...listQuery, ...orderQuery }),
        response: { 200: SvixListOf(ApplicationOut), ...svixErrors() },
      },
    },
    async (request) =>
      svixList(
        await store.applications.list(scopeOf(request), pageOf(request.query, 'asc'), keyAppsOf(request)),
        applicationOut,
      ),
  );

  app.post(
    '/api/v1/app',
    {
      schema: {
        summary: 'Create an application (with get_if_exists, answer the one with this uid if there is one)',
        tags,
        querystring: Type.Object({ get_if_exists: Type.Optional(Type.Boolean()) }),
        body: withExample(ApplicationIn, { name: 'Acme Inc.', uid: 'acme', metadata: { plan: 'enterprise' } }),
        response: {
          200: meaning(ApplicationOut, 'Exists already (get_if_exists=true): the application with this uid'),
          201: meaning(ApplicationOut, 'Created'),
          ...svixErrors(409),
        },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { uid } = request.body;
      if (request.query.get_if_exists && uid) {
        const existing = await store.applications.get(scope, uid);
        if (existing) return applicationOut(existing);
      }
      const row = await createApplication(store, scope, request.body);
      reply.code(201);
      return applicationOut(row);
    },
  );

  app.get(
    '/api/v1/app/:app_id',
    {
      schema: {
        summary: 'Get an application by id or uid',
        tags,
        params: AppParams,
        response: { 200: ApplicationOut, ...svixErrors(404) },
      },
    },
    async (request) => applicationOut(await appOf(store, scopeOf(request), request.params.app_id)),
  );

  // PUT creates the application when none has this id or uid (the path's value becomes its uid). On an
  // existing one it sets every field but uid, which stays unless given: the path may be naming it by it.
  app.put(
    '/api/v1/app/:app_id',
    {
      schema: {
        summary: 'Update an application, or create it with this uid',
        tags,
        params: AppParams,
        body: withExample(ApplicationIn, { name: 'Acme Inc.', uid: 'acme', metadata: { plan: 'enterprise' } }),
        response: {
          200: meaning(ApplicationOut, 'Updated'),
          201: meaning(ApplicationOut, 'Created: no application had this id or uid'),
          ...svixErrors(404, 409),
        },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { name, uid, metadata } = checked(request.body);
      const current = await store.applications.get(scope, request.params.app_id);
      if (!current) {
        if (request.params.app_id.startsWith(ID_PREFIX.application))
          throw notFound(`application ${request.params.app_id}`);
        const row = await createApplication(store, scope, { ...request.body, uid: uid ?? request.params.app_id });
        reply.code(201);
        return applicationOut(row);
      }
      const row = await uidChecked(() =>
        store.applications.update(scope, current.id, { name, uid, metadata: metadata ?? {} }),
      );
      if (!row) throw notFound(`application ${request.params.app_id}`);
      return applicationOut(row);
    },
  );

  app.patch(
    '/api/v1/app/:app_id',
    {
      schema: {
        summary: 'Change some fields of an application',
        tags,
        params: AppParams,
        body: withExample(ApplicationPatch, { name: 'Acme Corporation' }),
        response: { 200: ApplicationOut, ...svixErrors(404, 409) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { name, uid, metadata } = checked(request.body);
      const current = await appOf(store, scope, request.params.app_id);
      const row = await uidChecked(() => store.applications.update(scope, current.id, { name, uid, metadata }));
      if (!row) throw notFound(`application ${request.params.app_id}`);
      return applicationOut(row);
    },
  );

  app.delete(
    '/api/v1/app/:app_id',
    {
      schema: {
        summary: 'Delete an application and its endpoints',
        tags,
        params: AppParams,
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const current = await appOf(store, scope, request.params.app_id);
      if (!(await store.applications.delete(scope, current.id))) throw notFound(`application ${request.params.app_id}`);
      reply.code(204);
      return null;
    },
  );
};
