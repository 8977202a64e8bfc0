import { createHash } from 'node:crypto';
import type { Config } from '../../config.js';
import { outboundBody } from '../../domain/envelope.js';
import { startingWebhook, transformedUrlProblem } from '../../domain/transformations.js';
import { transformationOf } from '../../store/endpoints.js';
import type { EndpointRow } from '../../store/schema.js';
import { type Transformations, transformationError } from '../../transformations/index.js';
import { invalid } from '../errors.js';

// Simulate (native API and portal): the request an endpoint's transformation, or a draft of it, would make
// for a payload, under the limits and rules of a real attempt. Nothing is sent or saved.

export interface SimulateInput {
  code?: string | undefined;
  payload: object;
  event_type?: string | undefined;
}

export interface Simulated {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: unknown;
  cancel: boolean;
}

/** The event type a simulation uses when none is given. */
const SAMPLE_EVENT_TYPE = 'test.event';

export async function simulateTransformation(
  transformations: Transformations,
  config: Pick<Config, 'ssrfAllow' | 'testNetwork'>,
  endpoint: EndpointRow,
  input: SimulateInput,
  now: number,
): Promise<Simulated> {
  const stored = transformationOf(endpoint);
  const code = input.code ?? stored?.code ?? null;
  if (code === null) throw invalid('code: the endpoint has no transformation; give code to simulate');
  // Each draft's version is its text. A simulation's code is compiled for its run alone (not kept), so
  // the drafts of someone typing in an editor take no delivering endpoint's place among the kept runtimes.
  const version =
    input.code === undefined
      ? `saved:${stored!.updatedAt}`
      : `draft:${createHash('sha256').update(code).digest('hex')}`;
  const eventType = input.event_type ?? SAMPLE_EVENT_TYPE;
  const body = outboundBody(eventType, now, JSON.stringify(input.payload));
  const livemode = endpoint.livemode === 1;
  const outcome = await transformations.apply(
    endpoint.id,
    version,
    code,
    startingWebhook(endpoint.url, eventType, body),
    (url) =>
      transformedUrlProblem(
        url,
        { type: endpoint.type, livemode, publicOnly: livemode || endpoint.public_only === 1 },
        config,
      ),
    false,
  );
  if ('problem' in outcome) throw invalid(transformationError(outcome.problem));
  const { request } = outcome;
  return {
    method: request.method,
    url: request.url,
    headers: request.headers,
    payload: JSON.parse(request.body) as unknown,
    cancel: request.cancel,
  };
}
