import { isIP } from 'node:net';
import { refusedAddress } from './addresses.js';
import type { TestNetwork } from '../config.js';

const TEST_NETWORK_RULE = 'HERALD_TEST_NETWORK=public: Test endpoints must reach public addresses';

/**
 * Checks an endpoint URL when it is created or changed, and returns why it is refused (or null).
 * Live endpoints need https; they and `publicOnly` ones (chosen in a portal) need a host that is not a
 * local or private address; names are resolved and checked again at connect time, which is what stops
 * DNS rebinding. Other Test endpoints may use localhost and private addresses, but not link-local ones
 * (refusedAddress), unless `testNetwork` is `public`: then they too need a public host (http stays allowed). Credentials in the URL are refused: they would be shown on every read, and are not sent.
 */
export function endpointUrlProblem(
  text: string,
  livemode: boolean,
  allowList: string[],
  publicOnly = livemode,
  testNetwork: TestNetwork = 'private',
): string | null {
  if (text.length > 2048) return 'url must be at most 2048 characters';
  // The URL parser would drop surrounding ones and encode inner ones, and the endpoint would read back
  // as sent, which is not a URI: refused, so what is stored is what is requested.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what a URL may not hold
  if (/[\s\u0000-\u001f\u007f]/.test(text))
    return 'url must not contain spaces or control characters (percent-encode them)';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // Not echoed: a URL that fails to parse may still hold a password, and error messages are logged.
    return 'url is not a valid absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url must use http or https';
  if (livemode && url.protocol !== 'https:') return 'url must use https in Live mode';
  if (url.username !== '' || url.password !== '') return 'url must not contain a user name or password';
  return hostProblem(url.hostname, 'url', livemode, allowList, publicOnly, testNetwork);
}

/**
 * Checks a host an endpoint connects to (its URL's, or a broker's) when it is written, and returns why it is
 * refused (or null), naming `field`: under `publicOnly` (Live, a portal's choice, or HERALD_TEST_NETWORK=public)
 * not localhost nor a non-public address; otherwise not link-local. Names are checked again at connect time.
 */
export function hostProblem(
  hostname: string,
  field: string,
  livemode: boolean,
  allowList: string[],
  publicOnly = livemode,
  testNetwork: TestNetwork = 'private',
): string | null {
  // A trailing dot names the same host (`localhost.` is localhost), so it is judged without it.
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (allowList.includes(host)) return null;
  // Only the test network's rule holds this endpoint to public addresses: the answer names that rule.
  const byTestNetwork = !publicOnly && testNetwork === 'public';
  if ((publicOnly || byTestNetwork) && (host === 'localhost' || host.endsWith('.localhost'))) {
    return `${field} must not point at localhost ${livemode ? 'in Live mode' : byTestNetwork ? `(${TEST_NETWORK_RULE})` : '(endpoints added in a customer portal must reach public addresses)'}`;
  }
  // WHATWG URL parsing already turned numeric forms such as 2130706433 or 0x7f.1 into dotted IPv4.
  const refused = isIP(host) ? refusedAddress(host, host, publicOnly || byTestNetwork, allowList) : null;
  if (refused && byTestNetwork)
    return `${field} must not point at a non-public (private or reserved) address ${host} (${TEST_NETWORK_RULE})`;
  return refused && `${field} must not point at a ${refused}`;
}
