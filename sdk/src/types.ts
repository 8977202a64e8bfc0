import type { paths } from './openapi.js';

// Names for the request and response shapes of src/openapi.ts (generated from the served OpenAPI
// document), with the API's snake_case fields as they are on the wire.

type Operation<P extends keyof paths, M extends keyof paths[P]> = paths[P][M];
type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;

/** The JSON body an operation takes. */
export type RequestBody<P extends keyof paths, M extends keyof paths[P]> = JsonOf<
  NonNullable<Operation<P, M> extends { requestBody?: infer Body } ? Body : never>
>;

/** The query parameters an operation takes. */
export type QueryParams<P extends keyof paths, M extends keyof paths[P]> = NonNullable<
  Operation<P, M> extends { parameters: { query?: infer Query } } ? Query : never
>;

/** The JSON body of an operation's success answer (any 2xx it documents). */
export type ResponseBody<P extends keyof paths, M extends keyof paths[P]> =
  Operation<P, M> extends { responses: infer Responses }
    ? JsonOf<Responses[Extract<keyof Responses, 200 | 201 | 202>]>
    : never;

/** One page of a list: `next_cursor` goes into the next request's `cursor`. */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** The item type of a list operation. */
type ItemOf<P extends keyof paths> =
  ResponseBody<P, 'get' & keyof paths[P]> extends { data: (infer Item)[] } ? Item : never;

export type Message = ResponseBody<'/api/v1/messages/{id}', 'get'>;
export type MessagePayload = ResponseBody<'/api/v1/messages/{id}/payload', 'get'>;
export type MessageCreateParams = RequestBody<'/api/v1/messages', 'post'>;
export type MessageCreated = ResponseBody<'/api/v1/messages', 'post'>;
export type MessageListParams = QueryParams<'/api/v1/messages', 'get'>;
export type SendTestParams = RequestBody<'/api/v1/messages/send-test', 'post'>;
export type SendTestResult = ResponseBody<'/api/v1/messages/send-test', 'post'>;
export type ReplayResult = ResponseBody<'/api/v1/messages/{id}/replay', 'post'>;

export type Application = ResponseBody<'/api/v1/applications/{id}', 'get'>;
export type ApplicationCreated = ResponseBody<'/api/v1/applications', 'post'>;
export type ApplicationCreateParams = RequestBody<'/api/v1/applications', 'post'>;
export type ApplicationUpdateParams = RequestBody<'/api/v1/applications/{id}', 'patch'>;
export type ApplicationListItem = ItemOf<'/api/v1/applications'>;
export type PortalPathRotated = ResponseBody<'/api/v1/applications/{id}/rotate-portal-path', 'post'>;
export type ApplicationStats = ResponseBody<'/api/v1/applications/{id}/stats', 'get'>;
export type ApplicationStatsParams = QueryParams<'/api/v1/applications/{id}/stats', 'get'>;

export type Endpoint = ResponseBody<'/api/v1/endpoints/{id}', 'get'>;
export type EndpointCreated = ResponseBody<'/api/v1/endpoints', 'post'>;
export type EndpointCreateParams = RequestBody<'/api/v1/endpoints', 'post'>;
export type EndpointUpdateParams = RequestBody<'/api/v1/endpoints/{id}', 'patch'>;
export type EndpointListParams = QueryParams<'/api/v1/endpoints', 'get'>;
export type EndpointListItem = ItemOf<'/api/v1/endpoints'>;
export type SecretRotated = ResponseBody<'/api/v1/endpoints/{id}/rotate-secret', 'post'>;
export type RecoverParams = RequestBody<'/api/v1/endpoints/{id}/recover', 'post'>;
export type EndpointStats = ResponseBody<'/api/v1/endpoints/{id}/stats', 'get'>;
export type EndpointStatsParams = QueryParams<'/api/v1/endpoints/{id}/stats', 'get'>;

export type OperationalEndpointListItem = ItemOf<'/api/v1/operational-endpoints'>;
export type OperationalEndpointCreated = ResponseBody<'/api/v1/operational-endpoints', 'post'>;
export type OperationalEndpointCreateParams = RequestBody<'/api/v1/operational-endpoints', 'post'>;
export type OperationalEndpointListParams = QueryParams<'/api/v1/operational-endpoints', 'get'>;
export type OperationalEndpoint = ResponseBody<'/api/v1/operational-endpoints/{id}', 'patch'>;
export type OperationalEndpointUpdateParams = RequestBody<'/api/v1/operational-endpoints/{id}', 'patch'>;

export type BackgroundTask = ResponseBody<'/api/v1/background-tasks/{id}', 'get'>;

export type Delivery = ResponseBody<'/api/v1/deliveries/{id}', 'get'>;
export type DeliveryListItem = ItemOf<'/api/v1/deliveries'>;
export type DeliveryListParams = QueryParams<'/api/v1/deliveries', 'get'>;
export type DeliveryRetried = ResponseBody<'/api/v1/deliveries/{id}/retry', 'post'>;

export type EventType = ResponseBody<'/api/v1/event-types/{name}', 'get'>;
export type EventTypeCreateParams = RequestBody<'/api/v1/event-types', 'post'>;
export type EventTypeUpdateParams = RequestBody<'/api/v1/event-types/{name}', 'patch'>;
export type EventTypeListItem = ItemOf<'/api/v1/event-types'>;

export type ApiKey = ItemOf<'/api/v1/api-keys'>;
export type ApiKeyCreated = ResponseBody<'/api/v1/api-keys', 'post'>;
export type ApiKeyCreateParams = RequestBody<'/api/v1/api-keys', 'post'>;
export type ApiKeyRevoked = ResponseBody<'/api/v1/api-keys/{id}', 'delete'>;

export type Health = ResponseBody<'/healthz', 'get'>;
export type DevBootstrapParams = RequestBody<'/api/v1/dev/bootstrap', 'post'>;
export type DevBootstrap = ResponseBody<'/api/v1/dev/bootstrap', 'post'>;

/** Paging of any list: at most `limit` items a page, starting after `cursor`. */
export interface PageParams {
  limit?: number;
  cursor?: string;
}
