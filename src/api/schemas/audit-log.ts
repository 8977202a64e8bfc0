import { Type } from 'typebox';
import { ACTOR_TYPES } from '../../domain/audit.js';
import { EXAMPLE_ID, EXAMPLE_TIME, literals, Nullable, Timestamp } from './common.js';

// An audit log entry: who changed what, each changed field's [before, after] with secrets redacted.

export const AuditEntry = Type.Object(
  {
    id: Type.String({ description: 'aud_…' }),
    object: Type.Literal('audit_entry'),
    actor: Type.Object({
      type: literals(ACTOR_TYPES),
      id: Nullable(
        Type.String({ description: "the API key (key_…), the portal's application (app_…) or the CLI's system user" }),
      ),
    }),
    action: Type.String({ description: '<resource>.<verb>, such as endpoint.updated or api_key.created' }),
    resource: Type.Object({ type: Type.String(), id: Type.String() }),
    changes: Type.Record(Type.String(), Type.Array(Type.Unknown(), { minItems: 2, maxItems: 2 }), {
      description:
        'each changed field: [before, after]; null before a create and after a delete; secrets read "<redacted>"',
    }),
    request_id: Nullable(Type.String()),
    created_at: Timestamp,
  },
  {
    examples: [
      {
        id: 'aud_01jd5x3k8m2n4p6q8r0s2t4v6w',
        object: 'audit_entry',
        actor: { type: 'api_key', id: EXAMPLE_ID.key },
        action: 'endpoint.updated',
        resource: { type: 'endpoint', id: EXAMPLE_ID.endpoint },
        changes: {
          url: ['https://old.example.com/hook', 'https://example.com/hook'],
          headers_sealed: ['<redacted>', '<redacted>'],
        },
        request_id: 'req_01jd5x3k8m2n4p6q8r0s2t4v6w',
        created_at: EXAMPLE_TIME,
      },
    ],
  },
);
