import { Type } from 'typebox';

// Request fields of Svix's bodies that more than one of its resources takes. Fields every surface shares
// (URLs, event type names, channels) are src/api/schemas/fields.ts's.

/** Svix's metadata: your own string values, kept and shown back. */
export const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 1024 }), { maxProperties: 50 });

/** An application's or an endpoint's uid in Svix's bodies (its id prefix is refused where it is checked). */
export const Uid = Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9\\-_.]+$' });

/** A signing secret the caller chooses (suppliedSecretProblem judges it); null or left out: one is made. */
export const SuppliedSecret = Type.Union([Type.String({ maxLength: 256 }), Type.Null()]);

/** An endpoint's own headers, sent with every request (headersProblem judges them). */
export const Headers = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String());
