import type { FastifyRequest } from 'fastify';
import { invalid } from '../errors.js';
import { portalPath } from '../serialize.js';
import { isHostHeader } from '../../domain/host-header.js';

/**
 * The address of a portal link: under HERALD_PUBLIC_URL when it is set, the address customers open.
 * Without it, under the request's own address (its Host, or X-Forwarded-Host and -Proto from a trusted
 * proxy), only when that is a host name or an address with an optional port: a Host that is neither is
 * refused (400), so no caller's text reaches the link.
 */
export function portalUrl(publicUrl: string | null, request: FastifyRequest, token: string): string {
  if (publicUrl !== null) return `${publicUrl}${portalPath(token)}`;
  if (!isHostHeader(request.host))
    throw invalid(
      'the Host header is not a host name or an address with an optional port, and portal links are built from it: call Herald by its address, or set HERALD_PUBLIC_URL',
    );
  const scheme = request.protocol === 'https' ? 'https' : 'http';
  return `${scheme}://${request.host}${portalPath(token)}`;
}
