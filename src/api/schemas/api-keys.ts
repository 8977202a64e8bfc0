import { Type } from 'typebox';
import { ROLES } from '../../domain/access.js';
import { EXAMPLE_ID, EXAMPLE_TIME, literals, Nullable, Timestamp } from './common.js';

// An API key as lists show it, and as issued (its plaintext, shown once).

const apiKeyFields = {
  id: Type.String({ description: 'key_…' }),
  object: Type.Literal('api_key'),
  name: Type.String(),
  prefix: Type.Union([Type.Literal('sk_test_'), Type.Literal('sk_live_')]),
  livemode: Type.Boolean(),
  role: { ...literals(ROLES), description: 'What the key may do: admin (everything), writer, reader or emitter' },
  app_ids: Nullable(
    Type.Array(Type.String(), { description: 'The applications (app_… ids) the key acts on; null: every application' }),
  ),
  expires_at: Nullable(Timestamp),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
};
const apiKeyExample = {
  id: EXAMPLE_ID.key,
  object: 'api_key',
  name: 'CI key',
  prefix: 'sk_test_',
  livemode: false,
  role: 'emitter',
  app_ids: [EXAMPLE_ID.app],
  expires_at: null,
  created_at: EXAMPLE_TIME,
  revoked_at: null,
};
export const ApiKey = Type.Object(apiKeyFields, { examples: [apiKeyExample] });
export const ApiKeyWithSecret = Type.Object(
  {
    ...apiKeyFields,
    key: Type.String({ description: 'The key in plaintext, shown once' }),
  },
  { examples: [{ ...apiKeyExample, key: 'sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ' }] },
);

export const ApiKeyCreate = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 256 })),
    role: Type.Optional({
      ...literals(ROLES),
      description: 'admin (the default: everything), writer, reader or emitter',
    }),
    app_ids: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        maxItems: 100,
        description: 'Ids or uids of the applications the key acts on; absent: every application',
      }),
    ),
    expires_at: Type.Optional(Type.String({ description: 'When the key stops working (date-time); absent: never' })),
  },
  { examples: [{ name: 'CI key' }, { name: 'billing emitter', role: 'emitter', app_ids: ['acme'] }] },
);
