import type { FastifyInstance } from 'fastify';

// GET /: the address the README and the start-up line print. A browser is sent to the console; any other
// client gets a short index of where things are. Public (nothing in it is secret), not an operation of the
// OpenAPI document.

/** Where a person or a client goes from the root, as the index names them. */
export const ROOT_INDEX = {
  name: 'Herald',
  console: '/console',
  docs: '/docs',
  openapi: '/api/v1/openapi.json',
  health: '/healthz',
} as const;

/** Whether the request asks for a page: its Accept names text/html (what a browser sends for a navigation). */
export const wantsPage = (accept: string | undefined) => accept !== undefined && /\btext\/html\b/i.test(accept);

export function root(app: FastifyInstance): void {
  app.get('/', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'Accept');
    // Relative, so that a deployment under a path prefix (HERALD_PUBLIC_URL) lands on its own console.
    if (wantsPage(request.headers.accept)) return reply.redirect('console', 302);
    return reply.header('cache-control', 'no-store').send(ROOT_INDEX);
  });
}
