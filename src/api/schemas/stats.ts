import { Type } from 'typebox';
import { EXAMPLE_ID, Nullable, Timestamp } from './common.js';

// Attempts counted by hour over a window: an endpoint's (with durations) and an application's (by event type).

const statsCounts = {
  success: Type.Integer({ minimum: 0, description: 'Attempts answered 2xx' }),
  failure: Type.Integer({
    minimum: 0,
    description: 'Attempts that failed (non-2xx answer, timeout, connection error)',
  }),
};
export const StatsQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Start of the window (default: the start of the hour 23 hours before the one until falls in)',
    }),
  ),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'End of the window, excluded (default: now)' })),
});
export const EndpointStats = Type.Object(
  {
    object: Type.Literal('endpoint_stats'),
    endpoint_id: Type.String(),
    since: Timestamp,
    until: Timestamp,
    buckets: Type.Array(
      Type.Object({
        start: Timestamp,
        ...statsCounts,
        p50_ms: Nullable(
          Type.Integer({
            minimum: 0,
            description:
              "Median duration of the hour's attempts in ms (nearest rank: a duration one of them took, failures included); null: no attempts",
          }),
        ),
        p95_ms: Nullable(
          Type.Integer({
            minimum: 0,
            description:
              "95th percentile of the hour's attempt durations in ms (nearest rank, failures included); null: no attempts",
          }),
        ),
      }),
      {
        description:
          'Every UTC hour the window touches, oldest first; counts and durations are of attempts inside [since, until)',
      },
    ),
    totals: Type.Object(statsCounts),
  },
  {
    examples: [
      {
        object: 'endpoint_stats',
        endpoint_id: EXAMPLE_ID.endpoint,
        since: '2026-01-01T00:00:00.000Z',
        until: '2026-01-01T01:30:00.000Z',
        buckets: [
          { start: '2026-01-01T00:00:00.000Z', success: 118, failure: 2, p50_ms: 84, p95_ms: 412 },
          { start: '2026-01-01T01:00:00.000Z', success: 57, failure: 0, p50_ms: 79, p95_ms: 198 },
        ],
        totals: { success: 175, failure: 2 },
      },
    ],
  },
);

const eventTypeCounts = Type.Object({
  event_type: Type.String({ description: 'An event type name' }),
  ...statsCounts,
});
export const ApplicationStats = Type.Object(
  {
    object: Type.Literal('application_stats'),
    app_id: Type.String(),
    since: Timestamp,
    until: Timestamp,
    event_types: Type.Array(eventTypeCounts, {
      maxItems: 20,
      description:
        "The 20 event types (at most) with the most attempts in the window, most first (ties by name), with the window's counts",
    }),
    other: Type.Object(statsCounts, { description: 'The attempts of every other event type, summed' }),
    buckets: Type.Array(
      Type.Object({
        start: Timestamp,
        ...statsCounts,
        event_types: Type.Array(eventTypeCounts, {
          maxItems: 20,
          description: "The named event types with attempts in this hour, in the order of the window's event_types",
        }),
        other: Type.Object(statsCounts),
      }),
      {
        description:
          'Every UTC hour the window touches, oldest first; counts are of attempts inside [since, until), all event types together and by type',
      },
    ),
    totals: Type.Object(statsCounts),
  },
  {
    examples: [
      {
        object: 'application_stats',
        app_id: EXAMPLE_ID.app,
        since: '2026-01-01T00:00:00.000Z',
        until: '2026-01-01T01:30:00.000Z',
        event_types: [
          { event_type: 'invoice.paid', success: 150, failure: 2 },
          { event_type: 'invoice.refunded', success: 20, failure: 0 },
        ],
        other: { success: 5, failure: 0 },
        buckets: [
          {
            start: '2026-01-01T00:00:00.000Z',
            success: 118,
            failure: 2,
            event_types: [
              { event_type: 'invoice.paid', success: 100, failure: 2 },
              { event_type: 'invoice.refunded', success: 15, failure: 0 },
            ],
            other: { success: 3, failure: 0 },
          },
          {
            start: '2026-01-01T01:00:00.000Z',
            success: 57,
            failure: 0,
            event_types: [
              { event_type: 'invoice.paid', success: 50, failure: 0 },
              { event_type: 'invoice.refunded', success: 5, failure: 0 },
            ],
            other: { success: 2, failure: 0 },
          },
        ],
        totals: { success: 175, failure: 2 },
      },
    ],
  },
);
