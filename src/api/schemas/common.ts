import { type TLiteral, Type, type TSchema, type TUnion } from 'typebox';

// Request and response schemas. They validate at the edge, shape the serialized responses and generate
// the OpenAPI document, so each field of the contract is written down exactly once: the helpers and ids
// every resource's schemas use are here, the pages in pagination.ts, request fields that several surfaces
// take in fields.ts, the error envelope in errors.ts, and each resource's objects in a file of its own.

export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A literal schema per name of a tuple of names. */
type LiteralsOf<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };
/**
 * One of the named states of a list in src/domain/states.ts. The map keeps the list's order, so its type
 * is the tuple the cast names (TypeBox infers a union's static type from a tuple, not from an array).
 */
export const literals = <const T extends readonly string[]>(names: T): TUnion<LiteralsOf<T>> =>
  Type.Union(names.map((name) => Type.Literal(name)) as LiteralsOf<T>) as TUnion<LiteralsOf<T>>;

/**
 * `schema` as the answer of one status, with what that status means there (the OpenAPI document's
 * response description; the schema's own description is left as it is).
 */
export const meaning = <T extends TSchema>(schema: T, text: string): T =>
  ({ ...schema, 'x-response-description': text }) as T;

/** `schema` with one example (what the OpenAPI document and the /docs page show for it). */
export const withExample = <T extends TSchema>(schema: T, example: unknown): T =>
  ({ ...schema, examples: [example] }) as T;

/**
 * `schema` with a description: a field whose rules are written once (fields.ts) and described where a
 * surface documents it.
 */
export const described = <T extends TSchema>(schema: T, description: string): T => ({ ...schema, description }) as T;

/** What a success status means where a route does not say (the OpenAPI document's response description). */
export const SUCCESS_MEANINGS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the work is queued and done in the background',
  204: 'Done; no body',
};

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });

/** Ids as the examples of the OpenAPI document show them. */
export const EXAMPLE_ID = {
  message: 'evt_01jd5x3k8m2n4p6q8r0s2t4v6w',
  app: 'app_01jd5x3k8m2n4p6q8r0s2t4v6w',
  endpoint: 'ep_01jd5x3k8m2n4p6q8r0s2t4v6w',
  delivery: 'dlv_01jd5x3k8m2n4p6q8r0s2t4v6w',
  key: 'key_01jd5x3k8m2n4p6q8r0s2t4v6w',
};
/** The example message's W3C trace id, which its deliveries' examples carry too. */
export const EXAMPLE_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
export const EXAMPLE_TIME = '2026-01-01T00:00:00.000Z';
