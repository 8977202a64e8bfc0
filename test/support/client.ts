// A small HTTP client for black-box tests: every call returns status, headers and parsed JSON body.
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly key?: string,
  ) {}

  withKey(key: string): Client {
    return new Client(this.baseUrl, key);
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply<T>> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (this.key) (init.headers as Record<string, string>).authorization = `Bearer ${this.key}`;
    if (body !== undefined) {
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const response = await fetch(this.baseUrl + path, init);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body, headers);
  }
  patch<T = any>(path: string, body?: unknown) {
    return this.request<T>('PATCH', path, body);
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }
}

/** Creates an organization through the dev bootstrap route and returns clients for its two keys. */
export async function bootstrap(baseUrl: string, name = 'Test org') {
  const reply = await new Client(baseUrl).post('/api/v1/dev/bootstrap', { name });
  if (reply.status !== 201) throw new Error(`bootstrap failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return {
    org: reply.body.organization as { id: string; name: string },
    test: new Client(baseUrl, reply.body.test_key.key as string),
    live: new Client(baseUrl, reply.body.live_key.key as string),
    raw: reply.body,
  };
}
