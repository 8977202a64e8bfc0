import { isIPv4, isIPv6 } from 'node:net';

// What a request's Host (or a trusted proxy's X-Forwarded-Host) may hold for Herald to build a link from
// it: a host name, an IPv4 address or a bracketed IPv6 address, with an optional port. Anything else
// (quotes, angle brackets, spaces, a path, credentials) is refused, so a link never carries text the
// caller slipped in.

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/** A host name of letters, digits and hyphens in dot-separated labels (a trailing dot allowed). */
function isHostName(name: string): boolean {
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  return bare.length > 0 && bare.length <= 253 && bare.split('.').every((label) => LABEL.test(label));
}

/** True when `host` is a host name or an address, with an optional port from 1 to 65535. */
export function isHostHeader(host: string): boolean {
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(host);
  if (!match) return false;
  const [, name = '', port] = match;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return false;
  if (name.startsWith('[')) return isIPv6(name.slice(1, -1));
  return isIPv4(name) || isHostName(name);
}
