import type { FastifyInstance, FastifyRequest } from 'fastify';
import { applicationRefusal, everyApplicationRefusal, onlyReads, roleRefusal, type Area } from '../domain/access.js';
import type { Store } from '../store/index.js';
import { HttpError } from './errors.js';

/**
 * Where a route's application comes from, for a key limited to some applications:
 * - `param`: a path parameter holding the application's id or uid;
 * - `endpoint`, `message`, `delivery`, `task`: a path parameter holding the id of a resource of one application;
 * - `body`: the body's `app_id` (a create);
 * - `query`: a list's filter: `app_id`, else `endpoint_id`, else `message_id` (one of them is required);
 * - `applications`: the list of applications, which such a key sees only its own of;
 * - `catalog`: the environment's event catalog, shared by every application: such a key reads it only;
 * - `keys`: API keys, which such a key manages within its own applications (src/api/api-keys.ts);
 * - `every`: spans every application: such a key is refused.
 */
type AppSource =
  | { from: 'param' | 'endpoint' | 'message' | 'delivery' | 'task'; name: string }
  | { from: 'body' | 'query' | 'applications' | 'catalog' | 'keys' | 'every' };

export interface RouteAccess {
  area: Area;
  app: AppSource;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set for every route behind a key when it is added (routeAccess). */
    access?: RouteAccess;
  }
}

const param = (name: string): AppSource => ({ from: 'param', name });
const of = (from: 'endpoint' | 'message' | 'delivery' | 'task', name: string): AppSource => ({ from, name });

/**
 * The rule of each family of routes, tried in order; the first whose method and path match decides. A route
 * behind a key that matches none stops the service from starting (installAccess), so a new family of routes
 * gets its rule when it is written.
 */
const RULES: [methods: RegExp, path: RegExp, access: RouteAccess][] = [
  // Admin only.
  [/./, /^\/api\/v1\/api-keys(\/|$)/, { area: 'admin', app: { from: 'keys' } }],
  [/./, /^\/api\/v1\/(operational-endpoints|operational-webhook)(\/|$)/, { area: 'admin', app: { from: 'every' } }],
  [/./, /^\/api\/v1\/audit-log(\/|$)/, { area: 'admin', app: { from: 'every' } }],
  // Emitting and reading a message back: the emitter's whole reach.
  [/^POST$/, /^\/api\/v1\/messages$/, { area: 'emit', app: { from: 'body' } }],
  [/^POST$/, /^\/api\/v1\/app\/:app_id\/msg$/, { area: 'emit', app: param('app_id') }],
  [/^GET$/, /^\/api\/v1\/messages\/:id$/, { area: 'message', app: of('message', 'id') }],
  [/^GET$/, /^\/api\/v1\/app\/:app_id\/msg\/:msg_id$/, { area: 'message', app: param('app_id') }],
  // The Svix surface names the application in the path of everything of one application.
  [/./, /^\/api\/v1\/(app|auth\/app-portal-access)\/:app_id(\/|$)/, { area: 'general', app: param('app_id') }],
  [/^GET$/, /^\/api\/v1\/app$/, { area: 'general', app: { from: 'applications' } }],
  [/^POST$/, /^\/api\/v1\/app$/, { area: 'general', app: { from: 'every' } }],
  [/./, /^\/api\/v1\/background-task\/:task_id$/, { area: 'general', app: of('task', 'task_id') }],
  [/./, /^\/api\/v1\/background-task$/, { area: 'general', app: { from: 'every' } }],
  [/./, /^\/api\/v1\/event-type(\/|$)/, { area: 'general', app: { from: 'catalog' } }],
  // The native API names a resource by its own id.
  [/./, /^\/api\/v1\/applications\/:id(\/|$)/, { area: 'general', app: param('id') }],
  [/^GET$/, /^\/api\/v1\/applications$/, { area: 'general', app: { from: 'applications' } }],
  [/^POST$/, /^\/api\/v1\/applications$/, { area: 'general', app: { from: 'every' } }],
  [/./, /^\/api\/v1\/endpoints\/:id(\/|$)/, { area: 'general', app: of('endpoint', 'id') }],
  [/./, /^\/api\/v1\/messages\/:id(\/|$)/, { area: 'general', app: of('message', 'id') }],
  [/./, /^\/api\/v1\/deliveries\/:id(\/|$)/, { area: 'general', app: of('delivery', 'id') }],
  [/./, /^\/api\/v1\/background-tasks\/:id(\/|$)/, { area: 'general', app: of('task', 'id') }],
  [/^GET$/, /^\/api\/v1\/(messages|endpoints|deliveries)$/, { area: 'general', app: { from: 'query' } }],
  [/^POST$/, /^\/api\/v1\/(endpoints|messages\/send-test)$/, { area: 'general', app: { from: 'body' } }],
  [/./, /^\/api\/v1\/event-types(\/|$)/, { area: 'general', app: { from: 'catalog' } }],
];

/** The rule of a route behind a key, or undefined when no rule covers it. */
export function routeAccess(method: string, url: string): RouteAccess | undefined {
  const asRouted = method === 'HEAD' ? 'GET' : method;
  return RULES.find(([methods, path]) => methods.test(asRouted) && path.test(url))?.[2];
}

/** A request as its refusal names it: `POST /api/v1/endpoints`. */
const described = (request: FastifyRequest) => `${request.method} ${request.routeOptions.url}`;

const forbidden = (message: string) => new HttpError(403, 'forbidden', message);

/**
 * Gives every route behind a key its rule as it is added (a route without one stops the start), and checks
 * each request against its key: the role before the body is read, the applications once it is parsed
 * (they may sit in the body) and before it is validated, so a refused request is refused whatever it
 * holds. Installed after installAuth, whose hook finds the key.
 */
export function installAccess(app: FastifyInstance, store: Store): void {
  app.addHook('onRoute', (route) => {
    if (route.config?.public || !route.url.startsWith('/api/')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const access = routeAccess(method, route.url);
      if (!access) throw new Error(`${method} ${route.url} has no access rule: add one in src/api/access.ts`);
      route.config = { ...route.config, access };
    }
  });
  app.addHook('onRequest', async (request) => {
    const caller = request.caller;
    const access = request.routeOptions.config.access;
    if (!caller || !access) return;
    const refusal = roleRefusal(caller.power.role, access.area, request.method, described(request));
    if (refusal) throw forbidden(refusal);
  });
  app.addHook('preValidation', async (request) => {
    const caller = request.caller;
    const access = request.routeOptions.config.access;
    if (!caller || !access) return;
    const appIds = caller.power.appIds;
    if (appIds === null) return;
    const appId = await applicationOf(store, request, access.app);
    if (appId === 'every') {
      const refusal = everyApplicationRefusal(appIds, described(request));
      if (refusal) throw forbidden(refusal);
    } else if (appId !== null) {
      const refusal = applicationRefusal(appIds, appId);
      if (refusal) throw forbidden(refusal);
    }
  });
}

/**
 * The application a request acts on (an `app_…` id), `every` when it spans every application, or null when
 * the route itself keeps to the key's applications or the resource is missing (the route answers 404). An
 * application named that does not exist is answered by its name, so a key limited to others is refused it:
 * some routes would create it (the Svix upserts, portal access with `application`).
 */
async function applicationOf(store: Store, request: FastifyRequest, source: AppSource): Promise<string | null> {
  const scope = request.caller!.scope;
  const params = request.params as Record<string, string>;
  const query = (request.query ?? {}) as Record<string, string | undefined>;
  const endpointApp = async (id: string) => (await store.endpoints.get(scope, id))?.app_id ?? null;
  const namedApp = async (idOrUid: string) => (await store.applications.get(scope, idOrUid))?.id ?? idOrUid;
  const messageApp = async (id: string) => (await store.messages.find(scope, id))?.app_id ?? null;
  switch (source.from) {
    case 'param':
      return namedApp(params[source.name]!);
    case 'endpoint':
      return endpointApp(params[source.name]!);
    case 'message':
      return messageApp(params[source.name]!);
    case 'delivery':
      return (await store.deliveries.row(scope, params[source.name]!))?.app_id ?? null;
    case 'task': {
      const subject = (await store.backgroundTasks.get(scope, params[source.name]!))?.subject_id;
      return subject ? endpointApp(subject) : null;
    }
    case 'body': {
      // Not yet validated: an app_id that is not a string is refused by validation next.
      const appId = (request.body as { app_id?: unknown } | undefined)?.app_id;
      return typeof appId === 'string' ? namedApp(appId) : null;
    }
    case 'query':
      if (query.app_id !== undefined) return namedApp(query.app_id);
      if (query.endpoint_id !== undefined) return endpointApp(query.endpoint_id);
      if (query.message_id !== undefined) return messageApp(query.message_id);
      throw forbidden(
        `this key is limited to some applications: ${described(request)} must name one (app_id, endpoint_id or message_id)`,
      );
    case 'catalog':
      return onlyReads(request.method) ? null : 'every';
    case 'every':
      return 'every';
    case 'applications':
    case 'keys':
      return null;
  }
}
