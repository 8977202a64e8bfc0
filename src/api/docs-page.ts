import type { FastifyInstance } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';

// The API reference page, GET /docs: Swagger UI rendering this service's OpenAPI document. Its scripts,
// styles and images are the ones @fastify/swagger-ui ships, served from here, so the page makes no request
// to any other host. Like /api/v1/openapi.json it needs no key, and it is not counted against rate limits:
// it reads nothing an organization owns.

/**
 * The page's Content-Security-Policy: everything from this origin only. Swagger UI sets styles from its
 * scripts (inline style attributes), hence 'unsafe-inline' for styles alone; images may be data: URLs
 * (its icons). The policy is sent on /docs responses only; the API's JSON answers are not pages.
 */
const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ');

export async function docsPage(app: FastifyInstance): Promise<void> {
  await app.register(async (docs) => {
    // Every route the plugin adds (the page, its JSON copy of the document, the static files) is public
    // and unlimited; registered inside this plugin, the rule reaches no other route.
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true, rateLimit: false } as typeof route.config;
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      staticCSP: DOCS_CSP,
      // validatorUrl false: the page does not send the document to swagger.io's validator.
      validatorUrl: false,
      theme: { title: 'Herald API reference' },
      uiConfig: { deepLinking: true, displayRequestDuration: true, tryItOutEnabled: false },
    });
  });
}
