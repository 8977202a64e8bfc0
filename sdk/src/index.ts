// herald-sdk: a typed client of Herald's /api/v1 over fetch, and a Standard Webhooks verifier over
// WebCrypto; no runtime dependencies, so it runs on Node >= 20 and in edge runtimes.
export { Herald, type HeraldOptions } from './client.js';
export { HeraldError } from './error.js';
export { List } from './list.js';
export {
  Webhook,
  WebhookVerificationError,
  type HeraldEvent,
  type WebhookHeaders,
  type VerifyOptions,
} from './webhook.js';
export type { RetryPolicy } from './transport.js';
export type { CreateOptions } from './resources/messages.js';
export type * from './types.js';
export type { paths } from './openapi.js';
