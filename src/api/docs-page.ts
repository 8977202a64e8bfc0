import type { FastifyInstance } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { HERALD_ICON_SVG } from './favicon.js';

// The API reference page, GET /docs: Swagger UI rendering this service's OpenAPI document, under Herald's
// name, logo and icon. Its scripts, styles and images are the ones @fastify/swagger-ui ships and the ones
// below, served from here, so the page makes no request to any other host. Like /api/v1/openapi.json it
// needs no key, and it is not counted against rate limits: it reads nothing an organization owns.

/** The top bar's logo: the icon and the name, white on the bar's dark background. */
const HERALD_LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 210 64" width="210" height="64">' +
  HERALD_ICON_SVG.replace('<svg ', '<svg x="0" y="0" ') +
  '<text x="78" y="45" fill="#fff" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"' +
  ' font-size="36" font-weight="700">Herald</text></svg>';

/** The top bar in Herald's colours, without the box for exploring another document's URL. */
const THEME_CSS = [
  '.swagger-ui .topbar { background-color: #1e1b4b; }',
  '.swagger-ui .topbar .download-url-wrapper { display: none; }',
  '.swagger-ui .info .title small.version-stamp { background-color: #4338ca; }',
].join('\n');

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
      theme: {
        title: 'Herald API',
        favicon: [
          { filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: HERALD_ICON_SVG },
        ],
        css: [{ filename: 'herald.css', content: THEME_CSS }],
      },
      logo: { type: 'image/svg+xml', content: HERALD_LOGO_SVG, href: '/docs', target: '_self' },
      uiConfig: { deepLinking: true, displayRequestDuration: true, tryItOutEnabled: false },
    });
  });
}
