import type { FastifyRequest } from 'fastify';
import { conflict, invalid, notFound } from '../errors.js';
import type { ApiDeps } from '../deps.js';
import { schemaValidator } from './schema-validator.js';
import type { EmitRequest, EmitResult } from '../../store/messages.js';
import type { Scope } from '../../store/index.js';
import { schemaFailure } from '../../domain/event-schema.js';
import { formatTraceparent, messageTrace } from '../../domain/trace-context.js';

// An emit as both surfaces make it (the native POST /api/v1/messages and send-test, and Svix's message
// create): the payload checked against its event type's schema, the message written in the emit's span,
// and the store's refusals answered as the contract's errors.

/** Turns a store refusal into the contract's error. */
function accepted(result: EmitResult, appId: string, eventType: string): Extract<EmitResult, { ok: true }> {
  if (result.ok) return result;
  if (result.reason === 'app_not_found') throw notFound(`application ${appId}`);
  if (result.reason === 'event_id_taken') throw conflict('a message with this event id exists already');
  throw invalid(`event_type "${eventType}" is not in this environment's event catalog`);
}

/** Emits a message after checking its payload against its event type's schema (both surfaces' emit). */
export async function emit(
  { store, metrics, schemas, tracer }: Pick<ApiDeps, 'store' | 'metrics' | 'schemas' | 'tracer'>,
  request: FastifyRequest,
  scope: Scope,
  appId: string,
  eventType: string,
  payload: object,
  idempotencyKey: string | null,
  extra: Pick<EmitRequest, 'eventId' | 'channels' | 'tags' | 'payloadExpiresAt' | 'deliverAt'> = {},
) {
  // The payload must satisfy the event type's schema, if its catalog entry has one. This is part of
  // checking the request, so it comes before the idempotency key is looked at, like the body's shape.
  const payloadJson = JSON.stringify(payload);
  const schemaJson = await store.eventTypes.schemaOf(scope, eventType);
  if (schemaJson !== null) {
    const validate = await schemaValidator(schemas, schemaJson, eventType);
    const failure = schemaFailure(validate, payload, 'payload', payloadJson.length);
    if (failure) throw invalid(`${failure}, in the schema of event type ${eventType}`);
  }
  // The message keeps the context its attempts descend from: the emit's span, or the caller's own.
  const result = await tracer.emit(tracer.requestContext(request), { appId, eventType }, (kept) =>
    store.messages.emit({
      scope,
      appId,
      eventType,
      payloadJson,
      idempotencyKey,
      ...extra,
      traceparent: kept && formatTraceparent(kept),
      tracestate: kept?.tracestate ?? null,
    }),
  );
  const created = accepted(result, appId, eventType);
  const { message } = created;
  // The request's log line names the message's trace.
  request.traceId = messageTrace(message.id, message.traceparent, message.tracestate).traceId;
  if (!created.idempotent) metrics.emitted(scope.livemode);
  if (created.unfiltered) {
    metrics.filtersUnapplied.inc(created.unfiltered);
    request.log.warn(
      { message_id: message.id, endpoints: created.unfiltered },
      'content filters not applied: the message ran out of its filter budget (HERALD_FILTER_BUDGET), so those endpoints receive it',
    );
  }
  return created;
}
