import { Type } from 'typebox';
import { endpointExample, endpointFields } from './endpoints.js';

/**
 * An operational endpoint: an endpoint object whose `app_id` is the environment's hidden application of
 * operational endpoints, and whose event types are Herald's operational events.
 */
const operationalEndpointExample = {
  ...endpointExample,
  url: 'https://ops.acme.example/herald',
  event_types: ['endpoint.disabled', 'message.attempt.exhausted'],
  description: 'Pager',
  headers: {},
  rate_limit: null,
  auth: null,
};
export const OperationalEndpoint = Type.Object(endpointFields, { examples: [operationalEndpointExample] });
export const OperationalEndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    signing_secret: Type.Optional(Type.String({ description: 'whsec_…, shown once' })),
  },
  { examples: [{ ...operationalEndpointExample, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] },
);
