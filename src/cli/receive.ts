import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../config.js';
import { signatureVerifies, suppliedSecretProblem, TIMESTAMP_TOLERANCE_S } from '../domain/secrets.js';

// `herald receive`: a webhook receiver for trying Herald out. It listens on loopback only, prints each
// request (method, path, webhook-id, event type, the body as indented JSON) and, given the endpoint's
// secret, whether its Standard Webhooks signature verifies. It answers `status` (default 200) to a request
// that verifies or when no secret is given, and 401 to one whose signature does not verify.

export interface ReceiveOptions {
  port: number;
  /** The endpoint's `whsec_…` secret, or an Ed25519 endpoint's `whpk_…` public key; none: nothing is checked. */
  secret?: string | undefined;
  /** The status answered to requests that verify (or to every request without a secret). */
  status: number;
  /** Where the lines go (stdout). */
  print: (line: string) => void;
}

/** Largest request body read: Herald's largest payload (HERALD_MAX_PAYLOAD_BYTES' ceiling) fits well inside. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Why `secret` cannot check signatures, or null. */
export function receiverSecretProblem(secret: string): string | null {
  if (secret.startsWith('whpk_')) {
    return Buffer.from(secret.slice(5), 'base64').length === 32
      ? null
      : '--secret whpk_… must be base64 of a 32-byte Ed25519 public key';
  }
  const problem = suppliedSecretProblem(secret);
  return problem && `--secret: ${problem} (the endpoint's signing_secret, or its public_key for ed25519)`;
}

/** The options of `herald receive` from the command line's values. */
export function receiveOptions(values: { port?: string; secret?: string; status?: string }): ReceiveOptions {
  const port = Number(values.port ?? '9000');
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new ConfigError('--port must be 0 to 65535');
  const status = Number(values.status ?? '200');
  if (!Number.isInteger(status) || status < 200 || status > 599) throw new ConfigError('--status must be 200 to 599');
  const problem = values.secret === undefined ? null : receiverSecretProblem(values.secret);
  if (problem) throw new ConfigError(problem);
  return { port, secret: values.secret, status, print: (line) => console.log(line) };
}

/** What the signature check says about one request. */
function signatureVerdict(secret: string | undefined, request: IncomingMessage, body: string): [boolean, string] {
  if (secret === undefined) return [true, 'signature not checked (start with --secret whsec_… to check it)'];
  const header = (name: string) => request.headers[name] as string | undefined;
  const id = header('webhook-id') ?? header('svix-id');
  const timestamp = header('webhook-timestamp') ?? header('svix-timestamp');
  const signature = header('webhook-signature') ?? header('svix-signature');
  if (!id || !timestamp || !signature) return [false, 'signature NOT verified: webhook-* headers missing'];
  const seconds = Number(timestamp);
  if (!Number.isInteger(seconds)) return [false, 'signature NOT verified: webhook-timestamp is not a number'];
  if (Math.abs(Date.now() / 1000 - seconds) > TIMESTAMP_TOLERANCE_S)
    return [false, `signature NOT verified: webhook-timestamp is more than ${TIMESTAMP_TOLERANCE_S} s away`];
  return signatureVerifies(secret, id, seconds, body, signature)
    ? [true, 'signature verified']
    : [false, 'signature NOT verified: no signature matches this secret'];
}

/** The body as indented JSON, or as received when it is not JSON. */
function shown(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function eventTypeOf(body: string): string {
  try {
    const type = (JSON.parse(body) as { type?: unknown }).type;
    return typeof type === 'string' ? type : '-';
  } catch {
    return '-';
  }
}

/** Starts the receiver on 127.0.0.1; resolves with the server and its URL once it listens. */
export async function startReceiver(options: ReceiveOptions): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', () => {
      const at = new Date().toISOString();
      if (size > MAX_BODY_BYTES) {
        options.print(`${at} ${request.method} ${request.url} refused: body over ${MAX_BODY_BYTES} bytes`);
        response.writeHead(413).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const [verified, verdict] = signatureVerdict(options.secret, request, body);
      const id = request.headers['webhook-id'] ?? request.headers['svix-id'] ?? '-';
      const status = verified ? options.status : 401;
      options.print(`${at} ${request.method} ${request.url} webhook-id ${id} event ${eventTypeOf(body)}`);
      options.print(`${verdict}; answered ${status}`);
      if (body.length > 0) options.print(shown(body));
      options.print('');
      // The body says why, as a receiver's would: Herald keeps it with the attempt (the console shows it).
      const answer = !verified
        ? verdict
        : status >= 400
          ? `failed on purpose: herald receive answers ${status} (--status ${status})`
          : 'ok';
      response.writeHead(status, { 'content-type': 'text/plain' }).end(answer);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE' ? new ConfigError(`port ${options.port} on 127.0.0.1 is in use (--port)`) : error,
      ),
    );
    server.listen(options.port, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url };
}

/** `herald receive`: runs until interrupted. */
export async function receive(options: ReceiveOptions): Promise<void> {
  const { server, url } = await startReceiver(options);
  const checks = options.secret === undefined ? 'signatures not checked' : 'checking signatures';
  options.print(`Receiving webhooks at ${url}/… (${checks}); Ctrl-C stops`);
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
