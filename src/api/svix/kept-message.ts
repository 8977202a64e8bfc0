import type { Store } from '../../store/index.js';

// A Svix answer that shows a message with its payload (message create, an endpoint's send-example) is kept
// for idempotent repeats without the payload: a payload is shown only while it is readable (not expunged,
// not past its own expiry: Messages.readablePayload), and the kept answer outlives both. A repeat fills
// the payload in at read time under that rule, `{}` once it is not readable, as every read shows it.

/** The answer as the replay store keeps it: `payload` left out (an answer asked without content keeps its `{}`). */
export function keptMessageAnswer(body: string, withContent: boolean): string {
  if (!withContent) return body;
  const { payload: _payload, ...rest } = JSON.parse(body) as Record<string, unknown>;
  return JSON.stringify(rest);
}

/**
 * A kept answer as a repeat gets it: the message's payload while it is readable, else `{}`. A kept `{}`
 * (asked without content) stays; any other kept payload (an answer kept whole) is read again too.
 */
export async function replayedMessageAnswer(store: Store, kept: string): Promise<string> {
  const answer = JSON.parse(kept) as Record<string, unknown>;
  const { payload } = answer;
  const empty = typeof payload === 'object' && payload !== null && Object.keys(payload).length === 0;
  if (empty || typeof answer.id !== 'string') return kept;
  const payloadJson = await store.messages.readablePayload(answer.id);
  return JSON.stringify({ ...answer, payload: payloadJson === undefined ? {} : JSON.parse(payloadJson) });
}
