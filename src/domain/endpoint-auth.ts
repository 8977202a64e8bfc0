import { REDACTED } from './headers.js';

// An endpoint's OAuth2 client (decisions: "Enterprise receivers", `auth`): Herald gets a bearer token from
// the receiver's token server with the client credentials grant (RFC 6749 §4.4) and sends it with every
// request. The token URL obeys the endpoint's address rules; the client secret is sealed at rest.

export type ClientAuth = 'basic' | 'post';

export interface AuthInput {
  type: 'oauth2_client_credentials';
  token_url: string;
  client_id: string;
  client_secret: string;
  scope?: string | null | undefined;
  audience?: string | null | undefined;
  client_auth?: ClientAuth | undefined;
}

/** The client as stored: everything but the secret in plain JSON, the secret sealed apart. */
export interface AuthSettings {
  type: 'oauth2_client_credentials';
  tokenUrl: string;
  clientId: string;
  scope: string | null;
  audience: string | null;
  clientAuth: ClientAuth;
}

/**
 * Checks an endpoint's `auth` and returns it with its secret, or why it cannot be used, naming the field.
 * `urlProblem` is the endpoint's URL rule (endpointUrlProblem under the caller's environment);
 * `storedSecret` stands for a client_secret sent back as REDACTED.
 */
export function checkedAuth(
  input: AuthInput,
  urlProblem: (url: string) => string | null,
  storedSecret: string | null = null,
): { settings: AuthSettings; secret: string } | string {
  const problem = urlProblem(input.token_url);
  if (problem) return `auth.token_url: ${problem.replace(/^url /, '')}`;
  let secret = input.client_secret;
  if (secret === REDACTED) {
    if (storedSecret === null)
      return 'auth.client_secret is "<redacted>" but the endpoint has no client secret to keep';
    secret = storedSecret;
  }
  return {
    settings: {
      type: input.type,
      tokenUrl: input.token_url,
      clientId: input.client_id,
      scope: input.scope ?? null,
      audience: input.audience ?? null,
      clientAuth: input.client_auth ?? 'basic',
    },
    secret,
  };
}

/** The client as reads show it: its secret redacted. */
export function shownAuth(settings: AuthSettings) {
  return {
    type: settings.type,
    token_url: settings.tokenUrl,
    client_id: settings.clientId,
    client_secret: REDACTED,
    scope: settings.scope,
    audience: settings.audience,
    client_auth: settings.clientAuth,
  };
}

/** An endpoint's client as an attempt uses it, with its secret opened. */
export interface OAuth2Client {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string | null;
  audience: string | null;
  /** `basic`: the client's id and secret in an Authorization header; `post`: in the form body. */
  clientAuth: ClientAuth;
}
