import { HttpError } from '../errors.js';
import type { ApiDeps } from '../deps.js';
import { messagePayloadToApi } from '../serialize.js';
import type { MessageRow } from '../../store/schema.js';

/** A message's stored payload as the payload routes answer it (API and portal); 410 payload_gone once it is not stored. */
export async function messagePayload(store: ApiDeps['store'], message: MessageRow) {
  const payloadJson = await store.messages.readablePayload(message.id);
  if (payloadJson === undefined)
    throw new HttpError(410, 'payload_gone', `the payload of message ${message.id} is no longer stored`);
  return messagePayloadToApi(message, payloadJson);
}
