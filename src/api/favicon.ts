import type { FastifyInstance } from 'fastify';

// Herald's icon, served from the package: GET /favicon.svg, which every page of the service links
// (<link rel="icon" href="/favicon.svg">), and GET /favicon.ico, the address a browser asks when a page names
// none. Public (so not rate limited), not operations of the OpenAPI document.

/** The icon: an "H" with a signal arc, white on indigo. */
export const HERALD_ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">' +
  '<rect width="64" height="64" rx="14" fill="#4338ca"/>' +
  '<path d="M17 16v32M35 16v32M17 32h18" stroke="#fff" stroke-width="7" stroke-linecap="round" fill="none"/>' +
  '<path d="M45 21a15 15 0 0 1 0 22" stroke="#a5b4fc" stroke-width="5" stroke-linecap="round" fill="none"/>' +
  '</svg>';

export function favicon(app: FastifyInstance): void {
  for (const url of ['/favicon.svg', '/favicon.ico']) {
    app.get(url, { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
      reply
        .header('content-type', 'image/svg+xml')
        .header('cache-control', 'public, max-age=86400')
        .send(HERALD_ICON_SVG),
    );
  }
}
