import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { type buildConnector, Pool, ProxyAgent } from 'undici';
import { allowListed, refusedAddress, refusedKind } from '../domain/addresses.js';
import type { ReceiverTls } from '../domain/pem.js';
import { LRUCache } from 'lru-cache';

// The egress proxy (HERALD_OUTBOUND_PROXY): deliveries leave through it, https receivers through a CONNECT
// tunnel and http ones as absolute-form requests, unless HERALD_NO_PROXY lists their host. The proxy
// connects to the receiver, so the address rule (refusedAddress) is applied before the request leaves:
// the receiver's name is resolved here and every address it has must be one the endpoint may reach.
// The proxy resolves the name again; stopping a name that changes its answer in between (DNS rebinding)
// is the proxy's part (docs/security.md).

type Connector = ReturnType<typeof buildConnector>;

/**
 * Whether a receiver's host goes direct: HERALD_NO_PROXY names it, a domain it is under (`example.com`
 * covers `api.example.com`), or, for a receiver addressed by IP, that address or a range holding it.
 */
export function bypassesProxy(hostname: string, noProxy: readonly string[]): boolean {
  if (noProxy.length === 0) return false;
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (isIP(host)) return allowListed(host, noProxy as string[]);
  return noProxy.some((entry) => host === entry || host.endsWith(`.${entry}`));
}

/** Verdicts of checkBeforeProxy kept this long: the proxy's own resolution is what the request uses anyway. */
const VERDICT_MS = 5_000;
const VERDICTS_KEPT = 4_096;

/**
 * Resolves a receiver's host and says why the endpoint may not reach it (or null): every address the name
 * has must pass the endpoint's rule, since the proxy may connect to any of them. An IP literal is judged
 * as it is; a host on the operator's allow-list (HERALD_SSRF_ALLOW) is not resolved. The message does not
 * name the addresses (attempt errors are shown to whoever made the endpoint).
 */
export class ProxyPrecheck {
  /** By host, the least recently used going first past VERDICTS_KEPT. */
  private readonly verdicts = new LRUCache<string, { until: number; problem: string | null }>({ max: VERDICTS_KEPT });

  constructor(
    private readonly allow: string[],
    private readonly lookup: typeof dnsLookup = dnsLookup,
  ) {}

  async problem(hostname: string, publicOnly: boolean): Promise<string | null> {
    const host = hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const refused = refusedAddress(host, host, publicOnly, this.allow);
      return refused && `refused to connect to ${refused}`;
    }
    if (this.allow.includes(host.replace(/\.$/, ''))) return null;
    const key = `${publicOnly ? 1 : 0}${host}`;
    const now = performance.now();
    const known = this.verdicts.get(key);
    if (known && known.until > now) return known.problem;
    const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      this.lookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
    );
    const problem = addresses.some(({ address }) => refusedAddress(address, host, publicOnly, this.allow) !== null)
      ? `refused to send through the egress proxy: ${host} resolves to ${refusedKind(publicOnly)}`
      : null;
    this.verdicts.set(key, { until: now + VERDICT_MS, problem });
    return problem;
  }
}

/** A connection to the egress proxy itself failed: what an attempt records names the proxy. */
export class ProxyUnreachableError extends Error {
  readonly code = 'HERALD_PROXY_UNREACHABLE';
}

/** The proxy's connector, whose failures say they are the proxy's (the proxy's address is the operator's, not shown). */
function proxyConnector(connect: Connector): Connector {
  return (options, callback) =>
    connect(options, (error, socket) => {
      if (error) {
        const code = (error as { code?: string }).code;
        return callback(new ProxyUnreachableError(`egress proxy unreachable${code ? ` (${code})` : ''}`), null);
      }
      callback(null, socket!);
    });
}

/** Pool options whose connector is the proxy's (proxyConnector). */
function tagged(options: object): Pool.Options {
  const { connect } = options as Pool.Options;
  return { ...(options as Pool.Options), connect: proxyConnector(connect as Connector) };
}

/**
 * A dispatcher that sends every request through the proxy at `proxyUrl` (its credentials, if any, go as
 * Proxy-Authorization): CONNECT for https receivers, with `tls` on the tunnelled connection, and
 * absolute-form requests for http ones.
 */
export function proxyDispatcher(
  proxyUrl: string,
  options: { connections: number; keepAliveTimeout: number; tls?: ReceiverTls | null },
): ProxyAgent {
  const proxyOrigin = new URL(proxyUrl).origin;
  return new ProxyAgent({
    uri: proxyUrl,
    proxyTunnel: false,
    connections: options.connections,
    keepAliveTimeout: options.keepAliveTimeout,
    ...(options.tls ? { requestTls: { ...options.tls } } : {}),
    // The client that opens CONNECT tunnels, and the one that carries absolute-form requests.
    clientFactory: (origin, opts) => new Pool(origin, tagged(opts)),
    factory: (origin, opts) => {
      const options = opts as Pool.Options;
      return new URL(String(origin)).origin === proxyOrigin && typeof options.connect === 'function'
        ? new Pool(proxyOrigin, tagged(options))
        : new Pool(origin, options);
    },
  });
}
