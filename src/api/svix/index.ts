import type { RoutePlugin } from '../deps.js';
import { installSvixErrors, sendSvixError } from './errors.js';
import type { ErrorDialect } from '../errors.js';
import { installIdempotency } from './idempotency.js';
import { svixApplicationRoutes } from './applications.js';
import { svixEndpointRoutes } from './endpoints.js';
import { svixMessageRoutes } from './messages.js';
import { svixAttemptRoutes } from './attempts.js';
import { svixEventTypeRoutes } from './event-types.js';
import { svixBackgroundTaskRoutes } from './background-tasks.js';
import { svixOperationalEndpointRoutes } from './operational-endpoints.js';
import { svixPortalAccessRoutes } from './portal-access.js';
import { svixTransformationRoutes } from './transformation.js';

// The Svix-compatible surface (docs/svix-compatibility.md): Svix's paths, bodies, statuses and errors
// over Herald's own store, so code written against Svix's SDKs runs with only its server URL changed.
// One encapsulated plugin, so its error handler answers in Svix's shapes and no native route's changes.

/** The paths Svix's API has under /api/v1 (none is a native route's). */
const SVIX_PATHS =
  /^\/api\/v1\/(app|event-type|background-task|operational-webhook|auth|health|connector|environment|stream|stats)(\/|$)/;

/** A request to a Svix path that matches no route is answered in Svix's shape too. */
export const svixDialect: ErrorDialect = {
  owns: (path) => SVIX_PATHS.test(path),
  send: (reply, error) => sendSvixError(reply, error, null),
};
export const svixRoutes: RoutePlugin = async (app, deps) => {
  installSvixErrors(app);
  // Answers are written with JSON.stringify: each route's mapping (models.ts) builds exactly the fields it
  // answers, and compiling a serializer per documented status of fifty routes would cost every start of
  // the service about half a second.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  installIdempotency(app, deps.store);
  for (const routes of [
    svixApplicationRoutes,
    svixEndpointRoutes,
    svixMessageRoutes,
    svixAttemptRoutes,
    svixEventTypeRoutes,
    svixBackgroundTaskRoutes,
    svixOperationalEndpointRoutes,
    svixPortalAccessRoutes,
    svixTransformationRoutes,
  ])
    await app.register(routes, deps);
};
