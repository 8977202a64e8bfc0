import { Type } from 'typebox';
import { withExample } from '../schemas/common.js';
import { invalid, notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { portalUrl } from '../shared/portal-url.js';
import { AppParams } from './common.js';
import { ApplicationIn, createApplication } from './application-input.js';
import { svixErrors } from './errors.js';

/** How long a link opens the portal when the request names no `expiry` (Svix's default), and at most. */
const DEFAULT_EXPIRY_S = 7 * 86_400;
const MAX_EXPIRY_S = 365 * 86_400;

export const svixPortalAccessRoutes: RoutePlugin = async (app, { store, config }) => {
  // A new link per call: each opens the application's customer portal (src/portal/) until it expires or
  // the application's portal path is rotated (rotate-portal-path ends every link of the application). Its
  // URL is under HERALD_PUBLIC_URL, or the request's own address when that is a host (portal-url.ts).
  app.post(
    '/api/v1/auth/app-portal-access/:app_id',
    {
      config: { credentialAnswer: true },
      schema: {
        summary: "A link to the application's customer portal, valid for `expiry` seconds (default 7 days)",
        tags: ['svix: authentication'],
        params: AppParams,
        body: withExample(
          Type.Object({
            expiry: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: MAX_EXPIRY_S }), Type.Null()])),
            application: Type.Optional(Type.Union([ApplicationIn, Type.Null()])),
            readOnly: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
            featureFlags: Type.Optional(Type.Array(Type.String())),
            sessionId: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
            capabilities: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
          }),
          { expiry: 3600 },
        ),
        response: {
          200: withExample(Type.Object({ url: Type.String(), token: Type.String() }), {
            url: 'http://127.0.0.1:8080/portal/pt_3q8Zr0sT2v4W6x8Y0a2C4e6G8i0K2m4O',
            token: 'pt_3q8Zr0sT2v4W6x8Y0a2C4e6G8i0K2m4O',
          }),
          ...svixErrors(404),
        },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const body = request.body;
      if (body.readOnly) throw invalid('readOnly portals are not supported: the portal lets its user manage endpoints');
      let application = await store.applications.get(scope, request.params.app_id);
      if (!application && body.application)
        application = await createApplication(store, scope, {
          ...body.application,
          uid: body.application.uid ?? request.params.app_id,
        });
      if (!application) throw notFound(`application ${request.params.app_id}`);
      const expiresAt = store.ctx.now() + (body.expiry ?? DEFAULT_EXPIRY_S) * 1000;
      const token = await store.applications.createPortalLink(scopeOf(request), application.id, expiresAt);
      return { url: portalUrl(config.publicUrl, request, token), token };
    },
  );
};
