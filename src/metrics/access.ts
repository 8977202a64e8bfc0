import { createHash, timingSafeEqual } from 'node:crypto';

// Who may read /metrics: anyone, or with HERALD_METRICS_TOKEN set, a request with `Authorization: Bearer
// <token>` (the scheme's name is case-insensitive, RFC 9110). Compared as digests in constant time, so the
// answer's timing tells nothing about the token.

const digest = (text: string) => createHash('sha256').update(text).digest();

export function metricsAccess(token: string | null): (authorization: string | undefined) => boolean {
  if (token === null) return () => true;
  const expected = digest(token);
  return (authorization) => {
    const match = /^bearer +(\S+)$/i.exec(authorization?.trim() ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}
