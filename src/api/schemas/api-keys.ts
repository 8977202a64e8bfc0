import { Type } from 'typebox';
import { EXAMPLE_ID, EXAMPLE_TIME, Nullable, Timestamp } from './common.js';

// An API key as lists show it, and as issued (its plaintext, shown once).

const apiKeyFields = {
  id: Type.String({ description: 'key_…' }),
  object: Type.Literal('api_key'),
  name: Type.String(),
  prefix: Type.Union([Type.Literal('sk_test_'), Type.Literal('sk_live_')]),
  livemode: Type.Boolean(),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
};
const apiKeyExample = {
  id: EXAMPLE_ID.key,
  object: 'api_key',
  name: 'CI key',
  prefix: 'sk_test_',
  livemode: false,
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
