import ipaddr from 'ipaddr.js';

// Which addresses a Live endpoint may reach. Only globally routable unicast addresses are public:
// loopback, private, link-local (which holds the 169.254.169.254 metadata service), CGNAT, multicast,
// unspecified and reserved ranges are not. IPv4-mapped IPv6 addresses are judged as the IPv4 inside.

export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zoneless = bare.split('%')[0]!;
  if (!ipaddr.isValid(zoneless)) return null;
  const address = ipaddr.parse(zoneless);
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

export function isPublicAddress(text: string): boolean {
  const address = parseAddress(text);
  if (address === null || address.range() !== 'unicast') return false;
  // ipaddr.js calls the deprecated IPv4-compatible block ::/96 (e.g. ::7f00:1) unicast; it is not public.
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return false;
  return true;
}

/** Whether a listening address (HOST) is this machine's loopback only: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  return parseAddress(host)?.range() === 'loopback';
}

const HOST_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/**
 * Whether an operator allow-list entry (lower-cased, without a trailing dot: as URLs give host names) is
 * a host name, an address or a CIDR range (10.0.0.0/8).
 */
export function isAllowListEntry(entry: string): boolean {
  if (entry.includes('/')) return ipaddr.isValidCIDR(entry);
  if (parseAddress(entry) !== null) return true;
  // A name whose last label is all digits is read as an IPv4 address by the URL parser (or refused, as
  // 192.168.1.300 is): no host name could match it.
  return HOST_NAME.test(entry) && !/(^|\.)\d+$/.test(entry);
}

/** An operator allow-list entry matches an address when it is that address or a CIDR range holding it. */
export function allowListed(address: string, allowList: string[]): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  return allowList.some((entry) => {
    try {
      if (entry.includes('/')) {
        const [range, bits] = ipaddr.parseCIDR(entry);
        return parsed.kind() === range.kind() && parsed.match(range, bits);
      }
      const single = parseAddress(entry);
      return single !== null && single.kind() === parsed.kind() && single.toString() === parsed.toString();
    } catch {
      return false;
    }
  });
}

/** AWS's IPv6 link-local services (instance metadata fd00:ec2::254, EKS pod identity ::23): unique-local addresses. */
const AWS_IPV6_SERVICES = ipaddr.parseCIDR('fd00:ec2::/32');
/** Cloud metadata services outside the link-local range: Alibaba Cloud's (in CGNAT space) and Oracle Cloud's. */
const METADATA_IPV4 = new Set(['100.100.100.200', '192.0.0.192']);
/** NAT64 prefixes: the IPv4 address a host reaches through them is in the last 32 bits. */
const NAT64 = [ipaddr.parseCIDR('64:ff9b::/96'), ipaddr.parseCIDR('64:ff9b:1::/48')];
/** 6to4: the IPv4 address is in bits 16–47. */
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16');
/** Teredo: the server's IPv4 address in bits 32–63, the client's in the last 32 bits, inverted. */
const TEREDO = ipaddr.parseCIDR('2001::/32');

const ipv4 = (bytes: number[]) => ipaddr.fromByteArray(bytes) as ipaddr.IPv4;

/**
 * The IPv4 addresses an IPv6 one carries (NAT64, 6to4, SIIT, Teredo, the deprecated IPv4-compatible
 * ::a.b.c.d): traffic to it may reach them.
 */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4[] {
  const bytes = v6.toByteArray();
  // ipaddr.js names IPv4-translated addresses (SIIT, ::ffff:0:a.b.c.d) by their RFC, 6145.
  if (NAT64.some((prefix) => v6.match(prefix)) || v6.range() === 'rfc6145') return [ipv4(bytes.slice(12))];
  if (v6.match(SIX_TO_FOUR)) return [ipv4(bytes.slice(2, 6))];
  if (v6.match(TEREDO)) return [ipv4(bytes.slice(4, 8)), ipv4(bytes.slice(12).map((byte) => byte ^ 0xff))];
  if (bytes.slice(0, 12).every((byte) => byte === 0) && bytes.slice(12).some((byte) => byte !== 0))
    return [ipv4(bytes.slice(12))];
  return [];
}

/**
 * Link-local addresses (169.254.0.0/16, fe80::/10), where cloud metadata services answer (169.254.169.254),
 * the metadata services outside that range, AWS's IPv6 ones, and all of these inside IPv6 forms that
 * carry an IPv4 address: no one's test receiver lives there.
 */
export function isLinkLocalOrMetadata(text: string): boolean {
  const address = parseAddress(text);
  if (address === null) return false;
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    if (v6.match(AWS_IPV6_SERVICES)) return true;
    const inside = embeddedIPv4(v6);
    if (inside.length === 0) return v6.range() === 'linkLocal';
    return inside.some((v4) => isLinkLocalOrMetadata(v4.toString()));
  }
  return address.range() === 'linkLocal' || METADATA_IPV4.has(address.toString());
}

/**
 * Why an endpoint may not reach `address` (the peer a connection reached, or a literal in its URL), or null.
 * `publicOnly` (Live endpoints, Test ones whose URL a portal customer chose, and every Test one under
 * HERALD_TEST_NETWORK=public): public addresses only.
 * Otherwise (Test endpoints made through the API) localhost and private networks are allowed (a
 * developer's receiver), but not link-local or metadata addresses. The operator's allow-list (host
 * names, addresses and ranges) lifts either rule.
 */
export function refusedAddress(
  address: string,
  hostname: string,
  publicOnly: boolean,
  allowList: string[],
): string | null {
  // Host names are listed without a trailing dot (`internal.corp.` names the same host).
  if (allowListed(address, allowList) || allowList.includes(hostname.replace(/\.$/, ''))) return null;
  const refused = publicOnly ? !isPublicAddress(address) : isLinkLocalOrMetadata(address);
  return refused ? refusedKind(publicOnly, address) : null;
}

/** The addresses an endpoint may not reach under a rule, in words (naming one when given). */
export function refusedKind(publicOnly: boolean, address?: string): string {
  return publicOnly
    ? `non-public (private or reserved) address${address ? ` ${address}` : 'es'} (Live endpoints, those added in a customer portal, and Test ones under HERALD_TEST_NETWORK=public must reach public addresses)`
    : `link-local or cloud metadata address${address ? ` ${address}` : 'es'} (Test endpoints may reach localhost and private networks, not these)`;
}
