/**
 * A request Herald refused or could not answer: `status`, `code` and `message` from the error envelope,
 * and `request_id` to quote to support (it is on the service's log line for the request). A request that
 * reached no answer (the network, a timeout) has status 0 and code `connection_error` or `timeout`.
 */
export class HeraldError extends Error {
  override readonly name = 'HeraldError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly request_id: string | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
