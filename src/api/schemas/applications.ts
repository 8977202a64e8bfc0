import { Type } from 'typebox';
import { EXAMPLE_ID, EXAMPLE_TIME, Nullable, Timestamp } from './common.js';

// An application, and the answer that shows its portal path (create and rotate-portal-path).

const applicationExample = {
  id: EXAMPLE_ID.app,
  object: 'application',
  name: 'Acme Inc.',
  uid: 'acme',
  created_at: EXAMPLE_TIME,
  updated_at: EXAMPLE_TIME,
};
export const Application = Type.Object(
  {
    id: Type.String({ description: 'app_…' }),
    object: Type.Literal('application'),
    name: Type.String(),
    uid: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { examples: [applicationExample] },
);

/** An application as create and rotate-portal-path answer: with its portal_path, shown only then. */
export const ApplicationWithPortalPath = Type.Object(
  {
    ...Application.properties,
    portal_path: Type.String({
      description:
        'Path of this application’s customer portal, relative to the base URL; shown only now (only its hash is stored)',
    }),
  },
  { examples: [{ ...applicationExample, portal_path: '/portal/pt_3q8Zr0sT2v4W6x8Y0a2C4e6G8i0K2m4O' }] },
);
