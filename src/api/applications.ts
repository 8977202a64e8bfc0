import { Type } from 'typebox';
import { conflict, notFound } from './errors.js';
import { keyAppsOf, scopeOf } from './auth.js';
import { pageOf, type RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { ListOf, pageQuery } from './schemas/pagination.js';
import { Application, ApplicationWithPortalPath } from './schemas/applications.js';
import { applicationToApi, applicationWithPortalPath, list } from './serialize.js';
import { UidTakenError } from '../store/applications.js';

const Name = Type.String({ minLength: 1, maxLength: 256 });
// A uid may stand in for the id in paths, so it must not look like one.
const Uid = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: '^(?!app_)[a-zA-Z0-9._:-]+$',
  description: 'Your stable id for this application (not starting with app_)',
});

/** Runs a store write and turns a taken uid into 409. */
async function uidChecked<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof UidTakenError) throw conflict(error.message);
    throw error;
  }
}

export const applicationRoutes: RoutePlugin = async (app, { store }) => {
  app.get(
    '/api/v1/applications',
    {
      schema: {
        summary: 'List applications',
        tags: ['applications'],
        querystring: Type.Object(pageQuery('application')),
        response: { 200: ListOf(Application), ...errors(400, 401, 429) },
      },
    },
    async (request) =>
      list(
        await store.applications.list(scopeOf(request), pageOf(request.query), keyAppsOf(request)),
        applicationToApi,
      ),
  );

  app.post(
    '/api/v1/applications',
    {
      schema: {
        summary: 'Create an application',
        tags: ['applications'],
        body: Type.Object({ name: Name, uid: Type.Optional(Uid) }, { examples: [{ name: 'Acme Inc.', uid: 'acme' }] }),
        response: { 201: ApplicationWithPortalPath, ...errors(400, 401, 409, 429) },
      },
    },
    async (request, reply) => {
      const row = await uidChecked(() => store.applications.create(scopeOf(request), request.body));
      reply.code(201);
      return applicationWithPortalPath(row);
    },
  );

  app.get(
    '/api/v1/applications/:id',
    {
      schema: {
        summary: 'Get an application by id or uid',
        tags: ['applications'],
        params: IdParams,
        response: { 200: Application, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.applications.get(scopeOf(request), request.params.id);
      if (!row) throw notFound(`application ${request.params.id}`);
      return applicationToApi(row);
    },
  );

  app.patch(
    '/api/v1/applications/:id',
    {
      schema: {
        summary: 'Update an application',
        tags: ['applications'],
        params: IdParams,
        body: Type.Object(
          { name: Type.Optional(Name), uid: Type.Optional(Type.Union([Uid, Type.Null()])) },
          { examples: [{ name: 'Acme Corporation' }] },
        ),
        response: { 200: Application, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request) => {
      const row = await uidChecked(() => store.applications.update(scopeOf(request), request.params.id, request.body));
      if (!row) throw notFound(`application ${request.params.id}`);
      return applicationToApi(row);
    },
  );

  // A portal link is the customer's only credential: one that leaked, whichever route made it, is ended
  // by a new portal path (rotation ends every link of the application).
  app.post(
    '/api/v1/applications/:id/rotate-portal-path',
    {
      schema: {
        summary:
          'Give the application a new portal_path; the previous one and every link app-portal-access made stop working at once',
        tags: ['applications'],
        params: IdParams,
        response: { 200: ApplicationWithPortalPath, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.applications.rotatePortalToken(scopeOf(request), request.params.id);
      if (!row) throw notFound(`application ${request.params.id}`);
      return applicationWithPortalPath(row);
    },
  );

  app.delete(
    '/api/v1/applications/:id',
    {
      schema: {
        summary: 'Delete an application and its endpoints',
        tags: ['applications'],
        params: IdParams,
        response: { 204: Type.Null(), ...errors(401, 404, 429) },
      },
    },
    async (request, reply) => {
      if (!(await store.applications.delete(scopeOf(request), request.params.id)))
        throw notFound(`application ${request.params.id}`);
      reply.code(204);
      return null;
    },
  );
};
