import type { FastifyReply } from 'fastify';
import type { RoutePlugin } from '../api/deps.js';
import { CHART_JS } from './chart.js';
import { RECEIVER_SETTINGS_JS } from './receiver-settings.js';
import { DESTINATION_SETTINGS_JS } from './destination-settings.js';
import { CONSOLE_CSS, CONSOLE_HTML } from './page.js';
import { CONSOLE_JS } from './script.js';

// The operator console: one static page and its assets, public (the page holds no data; the key a person
// pastes is checked by the API routes the script calls), hidden from the OpenAPI document.

/**
 * Scripts, styles, images and requests from this origin only, no inline script or style, no framing: what
 * the API returns can never run as code in the page, and the page's key can only go to this server.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

const publicRoute = { config: { public: true }, schema: { hide: true } } as const;

/** Nothing the console serves is cached or sent as a Referer. */
function privateAsset(reply: FastifyReply, type: string): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .type(type);
}

export const consoleRoutes: RoutePlugin = async (app) => {
  app.get('/console', publicRoute, async (_request, reply) =>
    privateAsset(reply, 'text/html; charset=utf-8').header('content-security-policy', CONSOLE_CSP).send(CONSOLE_HTML),
  );
  app.get('/console-assets/console.js', publicRoute, async (_request, reply) =>
    privateAsset(reply, 'text/javascript; charset=utf-8').send(CONSOLE_JS),
  );
  app.get('/console-assets/chart.js', publicRoute, async (_request, reply) =>
    privateAsset(reply, 'text/javascript; charset=utf-8').send(CHART_JS),
  );
  app.get('/console-assets/receiver-settings.js', publicRoute, async (_request, reply) =>
    privateAsset(reply, 'text/javascript; charset=utf-8').send(RECEIVER_SETTINGS_JS),
  );
  app.get('/console-assets/destination-settings.js', publicRoute, async (_request, reply) =>
    privateAsset(reply, 'text/javascript; charset=utf-8').send(DESTINATION_SETTINGS_JS),
  );
  app.get('/console-assets/console.css', publicRoute, async (_request, reply) =>
    privateAsset(reply, 'text/css; charset=utf-8').send(CONSOLE_CSS),
  );
};
